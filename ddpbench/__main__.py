from ddpbench.cli import main

raise SystemExit(main())
