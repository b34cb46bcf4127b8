from ddpbench.cli.main import main

raise SystemExit(main())
