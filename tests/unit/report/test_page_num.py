"""A figure on the page (report.page.num) is escaped as a template escapes it, without rendering one."""

import math

from markupsafe import Markup

from ddpbench.report.page import DASH, html, num


def test_num_is_the_template_s_text():
    cases = [(1.5, ".1f", ""), (1234567.891, ",.0f", " ms"), (math.inf, ".1f", ""), (-0.0, ".2f", " %"),
             (3, ".3g", " <&>")]
    for value, fmt, suffix in cases:
        shown = num(value, fmt, suffix)
        assert shown == html("{{ text }}", text=format(float(value), fmt) + suffix) and type(shown) is Markup
    assert num(1234567.891, ",.0f", " ms") == "1,234,568 ms" and num(3, ".3g", " <&>") == "3 &lt;&amp;&gt;"
    assert num(math.nan) is DASH and num(None) == DASH and num("n/a") == "n/a"
