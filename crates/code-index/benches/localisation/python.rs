//! An inventory package: models, pricing, parsing, reporting, a CLI.

use super::{Case, Project};

pub const PROJECT: Project = Project {
    name: "py-inventory",
    files: &[
        ("inventory/__init__.py", ""),
        (
            "inventory/models.py",
            r#"class Item:
    def __init__(self, sku, price, qty):
        self.sku = sku
        self.price = price
        self.qty = qty

    def value(self):
        return self.price * self.qty


class Stock:
    def __init__(self):
        self.items = {}

    def add(self, item):
        if item.sku in self.items:
            self.items[item.sku].qty += item.qty
        else:
            self.items[item.sku] = item

    def remove(self, sku, qty):
        item = self.items[sku]
        if qty > item.qty:
            raise ValueError("not enough stock for " + sku)
        item.qty -= qty
        if item.qty == 0:
            del self.items[sku]

    def total_value(self):
        return sum(i.value() for i in self.items.values())
"#,
        ),
        (
            "inventory/pricing.py",
            r#"from inventory.models import Item

TAX_RATE = 0.2


def bulk_discount(qty):
    if qty >= 100:
        return 0.15
    if qty >= 10:
        return 0.05
    return 0.0


def unit_price(item, qty):
    rate = bulk_discount(qty)
    return round(item.price * (1 - rate), 2)


def with_tax(amount):
    return round(amount * (1 + TAX_RATE), 2)


def quote(item, qty):
    return with_tax(unit_price(item, qty) * qty)
"#,
        ),
        (
            "inventory/parsing.py",
            r#"from inventory.models import Item


def parse_line(line):
    fields = [f.strip() for f in line.split(",")]
    sku, price, qty = fields[0], float(fields[1]), int(fields[2])
    return Item(normalise_sku(sku), price, qty)


def parse_csv(text):
    items = []
    for line in text.splitlines()[1:]:
        if not line.strip():
            continue
        items.append(parse_line(line))
    return items


def normalise_sku(sku):
    return sku.strip().upper()
"#,
        ),
        (
            "inventory/report.py",
            r#"from inventory.models import Stock


def format_row(item):
    return "%-10s %8.2f %5d" % (item.sku, item.price, item.qty)


def summary(stock):
    rows = [format_row(i) for i in sorted(stock.items.values(), key=lambda i: i.sku)]
    rows.append("total %.2f" % stock.total_value())
    return "\n".join(rows)


def page(rows, page_no, size):
    start = page_no * size
    return rows[start:start + size]


def reorder_list(stock, threshold):
    return [i.sku for i in stock.items.values() if i.qty < threshold]
"#,
        ),
        (
            "inventory/cli.py",
            r#"from inventory.parsing import parse_csv
from inventory.models import Stock
from inventory.report import summary


def load(text):
    stock = Stock()
    for item in parse_csv(text):
        stock.add(item)
    return stock


def main(text):
    return summary(load(text))
"#,
        ),
        (
            "tests/test_pricing.py",
            r#"from inventory.models import Item
from inventory.pricing import unit_price, quote, with_tax


def test_unit_price_at_ten():
    item = Item("A", 10.0, 1)
    assert unit_price(item, 10) == 9.5


def test_quote_bulk():
    item = Item("A", 10.0, 1)
    assert quote(item, 10) == 114.0


def test_with_tax():
    assert with_tax(100) == 120.0
"#,
        ),
        (
            "tests/test_models.py",
            r#"import pytest
from inventory.models import Item, Stock


def test_remove_all_deletes():
    s = Stock()
    s.add(Item("A", 1.0, 2))
    s.remove("A", 2)
    assert "A" not in s.items


def test_remove_too_many():
    s = Stock()
    s.add(Item("A", 1.0, 2))
    with pytest.raises(ValueError):
        s.remove("A", 3)


def test_add_merges():
    s = Stock()
    s.add(Item("A", 1.0, 2))
    s.add(Item("A", 1.0, 3))
    assert s.items["A"].qty == 5
"#,
        ),
        (
            "tests/test_report.py",
            r#"from inventory.models import Item, Stock
from inventory.report import summary, page, reorder_list
from inventory.cli import main


def test_page_second():
    assert page(list(range(10)), 1, 3) == [3, 4, 5]


def test_summary_total():
    s = Stock()
    s.add(Item("B", 2.0, 3))
    assert summary(s).endswith("total 6.00")


def test_main_end_to_end():
    out = main("sku,price,qty\nA, 1.5, 2\n\nB, 2.0, 1\n")
    assert "total 5.00" in out


def test_reorder():
    s = Stock()
    s.add(Item("A", 1.0, 1))
    assert reorder_list(s, 5) == ["A"]
"#,
        ),
    ],
    noise_before: (
        "inventory/parsing.py",
        "\n\ndef split_fields(line):\n    return [f.strip() for f in line.split(\",\")]\n",
    ),
    noise_after: (
        "inventory/report.py",
        "\n\ndef header():\n    return \"%-10s %8s %5s\" % (\"sku\", \"price\", \"qty\")\n",
    ),
};

pub const CASES: &[Case] = &[
    Case {
        name: "py-bulk-discount-boundary",
        kind: "wrong condition",
        project: &PROJECT,
        bug: &[(
            "inventory/pricing.py",
            "    if qty >= 10:",
            "    if qty > 10:",
        )],
        evidence: r#"============================= FAILURES =============================
______________________ test_unit_price_at_ten ______________________

    def test_unit_price_at_ten():
        item = Item("A", 10.0, 1)
>       assert unit_price(item, 10) == 9.5
E       assert 10.0 == 9.5
E        +  where 10.0 = unit_price(<inventory.models.Item object at 0x7f3a2c1d0e50>, 10)

tests/test_pricing.py:{L:tests/test_pricing.py#unit_price(item, 10) == 9.5}: AssertionError
===================== short test summary info ======================
FAILED tests/test_pricing.py::test_unit_price_at_ten - assert 10.0 == 9.5
"#,
    },
    Case {
        name: "py-page-offset",
        kind: "off-by-one",
        project: &PROJECT,
        bug: &[(
            "inventory/report.py",
            "    start = page_no * size",
            "    start = (page_no - 1) * size",
        )],
        evidence: r#"______________________ test_page_second ______________________

    def test_page_second():
>       assert page(list(range(10)), 1, 3) == [3, 4, 5]
E       assert [0, 1, 2] == [3, 4, 5]
E         At index 0 diff: 0 != 3

tests/test_report.py:{L:tests/test_report.py#assert page(list}: AssertionError
FAILED tests/test_report.py::test_page_second - assert [0, 1, 2] == [3, 4, 5]
"#,
    },
    Case {
        name: "py-quote-wrong-quantity",
        kind: "wrong call",
        project: &PROJECT,
        bug: &[(
            "inventory/pricing.py",
            "    return with_tax(unit_price(item, qty) * qty)",
            "    return with_tax(unit_price(item, 1) * qty)",
        )],
        evidence: r#"______________________ test_quote_bulk ______________________

    def test_quote_bulk():
        item = Item("A", 10.0, 1)
>       assert quote(item, 10) == 114.0
E       assert 120.0 == 114.0
E        +  where 120.0 = quote(<inventory.models.Item object at 0x7f3a2c1d0e50>, 10)

tests/test_pricing.py:{L:tests/test_pricing.py#assert quote(item, 10)}: AssertionError
FAILED tests/test_pricing.py::test_quote_bulk - assert 120.0 == 114.0
"#,
    },
    Case {
        name: "py-csv-blank-lines",
        kind: "missing case, crash far from fault",
        project: &PROJECT,
        bug: &[(
            "inventory/parsing.py",
            "        if not line.strip():\n            continue\n",
            "",
        )],
        evidence: r#"Traceback (most recent call last):
  File "/home/ci/work/tests/test_report.py", line {L:tests/test_report.py#out = main(}, in test_main_end_to_end
    out = main("sku,price,qty\nA, 1.5, 2\n\nB, 2.0, 1\n")
  File "/home/ci/work/inventory/cli.py", line {L:inventory/cli.py#return summary(load(text))}, in main
    return summary(load(text))
  File "/home/ci/work/inventory/cli.py", line {L:inventory/cli.py#for item in parse_csv(text)}, in load
    for item in parse_csv(text):
  File "/home/ci/work/inventory/parsing.py", line {L:inventory/parsing.py#items.append(parse_line(line))}, in parse_csv
    items.append(parse_line(line))
  File "/home/ci/work/inventory/parsing.py", line {L:inventory/parsing.py#sku, price, qty = fields[0]}, in parse_line
    sku, price, qty = fields[0], float(fields[1]), int(fields[2])
IndexError: list index out of range
"#,
    },
    Case {
        name: "py-remove-exact-stock",
        kind: "wrong condition",
        project: &PROJECT,
        bug: &[(
            "inventory/models.py",
            "        if qty > item.qty:",
            "        if qty >= item.qty:",
        )],
        evidence: r#"______________________ test_remove_all_deletes ______________________

    def test_remove_all_deletes():
        s = Stock()
        s.add(Item("A", 1.0, 2))
>       s.remove("A", 2)

tests/test_models.py:{L:tests/test_models.py#s.remove("A", 2)}:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
inventory/models.py:{L:inventory/models.py#raise ValueError}: in remove
    raise ValueError("not enough stock for " + sku)
E   ValueError: not enough stock for A
FAILED tests/test_models.py::test_remove_all_deletes - ValueError: not enough stock for A
"#,
    },
    Case {
        name: "py-add-does-not-merge",
        kind: "wrong value, fault in a callee",
        project: &PROJECT,
        bug: &[(
            "inventory/models.py",
            "            self.items[item.sku].qty += item.qty",
            "            self.items[item.sku] = item",
        )],
        evidence: r#"______________________ test_add_merges ______________________

    def test_add_merges():
        s = Stock()
        s.add(Item("A", 1.0, 2))
        s.add(Item("A", 1.0, 3))
>       assert s.items["A"].qty == 5
E       assert 3 == 5

tests/test_models.py:{L:tests/test_models.py#assert s.items["A"].qty == 5}: AssertionError
FAILED tests/test_models.py::test_add_merges - assert 3 == 5
"#,
    },
    Case {
        name: "py-item-value-sum",
        kind: "wrong operator, crash far from fault",
        project: &PROJECT,
        bug: &[(
            "inventory/models.py",
            "        return self.price * self.qty",
            "        return self.price + self.qty",
        )],
        evidence: r#"______________________ test_summary_total ______________________

    def test_summary_total():
        s = Stock()
        s.add(Item("B", 2.0, 3))
>       assert summary(s).endswith("total 6.00")
E       AssertionError: assert False
E        +  where False = <built-in method endswith of str object at 0x7f>('total 6.00')
E        +    where <built-in method endswith of str object at 0x7f> = 'B              2.00     3\ntotal 5.00'.endswith

tests/test_report.py:{L:tests/test_report.py#assert summary(s).endswith}: AssertionError
FAILED tests/test_report.py::test_summary_total - AssertionError: assert False
"#,
    },
    Case {
        name: "py-qty-from-price-column",
        kind: "wrong call",
        project: &PROJECT,
        bug: &[(
            "inventory/parsing.py",
            "float(fields[1]), int(fields[2])",
            "float(fields[1]), int(fields[1])",
        )],
        evidence: r#"Traceback (most recent call last):
  File "/home/ci/work/tests/test_report.py", line {L:tests/test_report.py#out = main(}, in test_main_end_to_end
    out = main("sku,price,qty\nA, 1.5, 2\n\nB, 2.0, 1\n")
  File "/home/ci/work/inventory/cli.py", line {L:inventory/cli.py#return summary(load(text))}, in main
    return summary(load(text))
  File "/home/ci/work/inventory/cli.py", line {L:inventory/cli.py#for item in parse_csv(text)}, in load
    for item in parse_csv(text):
  File "/home/ci/work/inventory/parsing.py", line {L:inventory/parsing.py#items.append(parse_line(line))}, in parse_csv
    items.append(parse_line(line))
  File "/home/ci/work/inventory/parsing.py", line {L:inventory/parsing.py#sku, price, qty = fields[0]}, in parse_line
    sku, price, qty = fields[0], float(fields[1]), int(fields[1])
ValueError: invalid literal for int() with base 10: '1.5'
"#,
    },
];
