//! An order service in Java (JUnit 5 output).

use super::{Case, Project};

pub const PROJECT: Project = Project {
    name: "java-orders",
    files: &[
        (
            "src/main/java/com/acme/orders/Order.java",
            r#"package com.acme.orders;

import java.util.ArrayList;
import java.util.List;

public class Order {
    private final String customer;
    private final List<Integer> prices = new ArrayList<>();

    public Order(String customer) {
        this.customer = customer;
    }

    public void addLine(int priceCents) {
        prices.add(priceCents);
    }

    public int subtotal() {
        int total = 0;
        for (int i = 0; i < prices.size(); i++) {
            total += prices.get(i);
        }
        return total;
    }

    public int lineCount() {
        return prices.size();
    }

    public String getCustomer() {
        return customer;
    }
}
"#,
        ),
        (
            "src/main/java/com/acme/orders/Discounts.java",
            r#"package com.acme.orders;

public final class Discounts {
    private Discounts() {}

    public static int loyaltyPercent(int years) {
        if (years >= 5) {
            return 10;
        }
        if (years >= 2) {
            return 5;
        }
        return 0;
    }

    public static int apply(int cents, int percent) {
        return cents - cents * percent / 100;
    }
}
"#,
        ),
        (
            "src/main/java/com/acme/orders/Inventory.java",
            r#"package com.acme.orders;

import java.util.HashMap;
import java.util.Map;

public class Inventory {
    private final Map<String, Integer> stock = new HashMap<>();

    public void put(String sku, int qty) {
        stock.put(sku, qty);
    }

    public boolean reserve(String sku, int qty) {
        Integer have = stock.get(sku);
        if (have == null || have < qty) {
            return false;
        }
        stock.put(sku, have - qty);
        return true;
    }

    public int available(String sku) {
        return stock.getOrDefault(sku, 0);
    }
}
"#,
        ),
        (
            "src/main/java/com/acme/orders/OrderService.java",
            r#"package com.acme.orders;

public class OrderService {
    private final Inventory inventory;

    public OrderService(Inventory inventory) {
        this.inventory = inventory;
    }

    public int price(Order order, int loyaltyYears) {
        int percent = Discounts.loyaltyPercent(loyaltyYears);
        return Discounts.apply(order.subtotal(), percent);
    }

    public boolean place(Order order, String sku, int qty) {
        if (!inventory.reserve(sku, qty)) {
            return false;
        }
        order.addLine(qty * 100);
        return true;
    }
}
"#,
        ),
        (
            "src/test/java/com/acme/orders/OrderServiceTest.java",
            r#"package com.acme.orders;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

class OrderServiceTest {
    @Test
    void loyalCustomerGetsTenPercent() {
        Order o = new Order("ann");
        o.addLine(1000);
        OrderService s = new OrderService(new Inventory());
        assertEquals(900, s.price(o, 5));
    }

    @Test
    void subtotalSumsAllLines() {
        Order o = new Order("bob");
        o.addLine(100);
        o.addLine(250);
        assertEquals(350, o.subtotal());
    }

    @Test
    void placeUnknownSkuFails() {
        OrderService s = new OrderService(new Inventory());
        assertFalse(s.place(new Order("cy"), "nope", 1));
    }

    @Test
    void reserveExactStock() {
        Inventory inv = new Inventory();
        inv.put("A", 2);
        assertTrue(inv.reserve("A", 2));
        assertEquals(0, inv.available("A"));
    }
}
"#,
        ),
    ],
    noise_before: (
        "src/main/java/com/acme/orders/Discounts.java",
        "\nfinal class DiscountNames {\n    static String name(int percent) {\n        return percent + \"%\";\n    }\n}\n",
    ),
    noise_after: (
        "src/main/java/com/acme/orders/Order.java",
        "\nfinal class OrderIds {\n    static String next(int n) {\n        return \"o-\" + n;\n    }\n}\n",
    ),
};

pub const CASES: &[Case] = &[
    Case {
        name: "java-loyalty-boundary",
        kind: "wrong condition, fault two calls away",
        project: &PROJECT,
        bug: &[(
            "src/main/java/com/acme/orders/Discounts.java",
            "        if (years >= 5) {",
            "        if (years > 5) {",
        )],
        evidence: r#"[ERROR] Tests run: 4, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.041 s <<< FAILURE! -- in com.acme.orders.OrderServiceTest
[ERROR] com.acme.orders.OrderServiceTest.loyalCustomerGetsTenPercent -- Time elapsed: 0.007 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <900> but was: <950>
	at org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
	at org.junit.jupiter.api.AssertionUtils.failNotEqual(AssertionUtils.java:197)
	at org.junit.jupiter.api.AssertEquals.assertEquals(AssertEquals.java:150)
	at org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:531)
	at com.acme.orders.OrderServiceTest.loyalCustomerGetsTenPercent(OrderServiceTest.java:{L:src/test/java/com/acme/orders/OrderServiceTest.java#assertEquals(900})
"#,
    },
    Case {
        name: "java-subtotal-skips-last",
        kind: "off-by-one",
        project: &PROJECT,
        bug: &[(
            "src/main/java/com/acme/orders/Order.java",
            "i < prices.size();",
            "i < prices.size() - 1;",
        )],
        evidence: r#"[ERROR] com.acme.orders.OrderServiceTest.subtotalSumsAllLines -- Time elapsed: 0.002 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <350> but was: <100>
	at org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
	at org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:531)
	at com.acme.orders.OrderServiceTest.subtotalSumsAllLines(OrderServiceTest.java:{L:src/test/java/com/acme/orders/OrderServiceTest.java#assertEquals(350})
"#,
    },
    Case {
        name: "java-reserve-unknown-sku",
        kind: "missing case",
        project: &PROJECT,
        bug: &[(
            "src/main/java/com/acme/orders/Inventory.java",
            "if (have == null || have < qty)",
            "if (have < qty)",
        )],
        evidence: r#"[ERROR] com.acme.orders.OrderServiceTest.placeUnknownSkuFails -- Time elapsed: 0.003 s <<< ERROR!
java.lang.NullPointerException: Cannot invoke "java.lang.Integer.intValue()" because "have" is null
	at com.acme.orders.Inventory.reserve(Inventory.java:{L:src/main/java/com/acme/orders/Inventory.java#if (have < qty)})
	at com.acme.orders.OrderService.place(OrderService.java:{L:src/main/java/com/acme/orders/OrderService.java#inventory.reserve(sku, qty)})
	at com.acme.orders.OrderServiceTest.placeUnknownSkuFails(OrderServiceTest.java:{L:src/test/java/com/acme/orders/OrderServiceTest.java#assertFalse(s.place})
"#,
    },
    Case {
        name: "java-reserve-exact-stock",
        kind: "wrong condition",
        project: &PROJECT,
        bug: &[(
            "src/main/java/com/acme/orders/Inventory.java",
            "have < qty)",
            "have <= qty)",
        )],
        evidence: r#"[ERROR] com.acme.orders.OrderServiceTest.reserveExactStock -- Time elapsed: 0.001 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <true> but was: <false>
	at org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
	at org.junit.jupiter.api.AssertTrue.failNotTrue(AssertTrue.java:63)
	at org.junit.jupiter.api.Assertions.assertTrue(Assertions.java:37)
	at com.acme.orders.OrderServiceTest.reserveExactStock(OrderServiceTest.java:{L:src/test/java/com/acme/orders/OrderServiceTest.java#assertTrue(inv.reserve})
"#,
    },
    Case {
        name: "java-discount-formula",
        kind: "wrong expression, fault two calls away",
        project: &PROJECT,
        bug: &[(
            "src/main/java/com/acme/orders/Discounts.java",
            "cents - cents * percent / 100",
            "cents - percent / 100",
        )],
        evidence: r#"[ERROR] com.acme.orders.OrderServiceTest.loyalCustomerGetsTenPercent -- Time elapsed: 0.007 s <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <900> but was: <1000>
	at org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
	at org.junit.jupiter.api.Assertions.assertEquals(Assertions.java:531)
	at com.acme.orders.OrderServiceTest.loyalCustomerGetsTenPercent(OrderServiceTest.java:{L:src/test/java/com/acme/orders/OrderServiceTest.java#assertEquals(900})
"#,
    },
];
