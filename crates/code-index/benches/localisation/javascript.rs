//! A shopping cart (JavaScript, ES modules, jest) and a job scheduler
//! (TypeScript).

use super::{Case, Project};

pub const CART: Project = Project {
    name: "js-cart",
    files: &[
        (
            "src/money.js",
            r#"export function roundCents(x) {
  return Math.round(x * 100) / 100;
}

export function sum(values) {
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    total += values[i];
  }
  return total;
}
"#,
        ),
        (
            "src/coupons.js",
            r#"export const COUPONS = { SAVE10: 0.1, HALF: 0.5 };

export function lookupCoupon(code) {
  const key = code.trim().toUpperCase();
  if (!(key in COUPONS)) {
    return null;
  }
  return { code: key, rate: COUPONS[key] };
}

export function applyCoupon(total, coupon) {
  if (!coupon) {
    return total;
  }
  return total * (1 - coupon.rate);
}
"#,
        ),
        (
            "src/cart.js",
            r#"import { roundCents, sum } from './money.js';
import { lookupCoupon, applyCoupon } from './coupons.js';

export class Cart {
  constructor() {
    this.lines = [];
  }

  add(sku, price, qty = 1) {
    const existing = this.lines.find((l) => l.sku === sku);
    if (existing) {
      existing.qty += qty;
    } else {
      this.lines.push({ sku, price, qty });
    }
  }

  subtotal() {
    return sum(this.lines.map((l) => l.price * l.qty));
  }

  total(code) {
    const coupon = code ? lookupCoupon(code) : null;
    return roundCents(applyCoupon(this.subtotal(), coupon));
  }
}
"#,
        ),
        (
            "src/format.js",
            r#"export function formatPrice(x) {
  return '$' + x.toFixed(2);
}

export function receipt(cart) {
  return cart.lines.map((l) => `${l.sku} x${l.qty} ${formatPrice(l.price * l.qty)}`).join('\n');
}
"#,
        ),
        (
            "test/cart.test.js",
            r#"import { Cart } from '../src/cart.js';
import { receipt } from '../src/format.js';

test('total with coupon', () => {
  const c = new Cart();
  c.add('A', 10, 2);
  expect(c.total('save10')).toBe(18);
});

test('merges lines', () => {
  const c = new Cart();
  c.add('A', 10);
  c.add('A', 10);
  expect(c.lines.length).toBe(1);
  expect(c.subtotal()).toBe(20);
});

test('receipt', () => {
  const c = new Cart();
  c.add('A', 2.5, 2);
  expect(receipt(c)).toBe('A x2 $5.00');
});

test('no coupon', () => {
  const c = new Cart();
  c.add('A', 10, 1);
  expect(c.total()).toBe(10);
});
"#,
        ),
    ],
    noise_before: (
        "src/format.js",
        "\nexport function formatQty(q) {\n  return `x${q}`;\n}\n",
    ),
    noise_after: (
        "src/money.js",
        "\nexport function max(values) {\n  return Math.max(...values);\n}\n",
    ),
};

pub const SCHEDULER: Project = Project {
    name: "ts-scheduler",
    files: &[
        (
            "src/queue.ts",
            r#"export interface Job {
  id: string;
  priority: number;
  attempts: number;
}

export class JobQueue {
  private jobs: Job[] = [];

  push(job: Job): void {
    this.jobs.push(job);
    this.jobs.sort((a, b) => b.priority - a.priority);
  }

  pop(): Job | undefined {
    return this.jobs.shift();
  }

  size(): number {
    return this.jobs.length;
  }
}
"#,
        ),
        (
            "src/retry.ts",
            r#"export function backoffDelay(attempt: number, baseMs: number): number {
  return baseMs * Math.pow(2, attempt - 1);
}

export function shouldRetry(attempts: number, maxAttempts: number): boolean {
  return attempts < maxAttempts;
}
"#,
        ),
        (
            "src/scheduler.ts",
            r#"import { Job, JobQueue } from './queue';
import { backoffDelay, shouldRetry } from './retry';

export class Scheduler {
  private queue = new JobQueue();
  public delays: number[] = [];

  constructor(private maxAttempts: number, private baseMs: number) {}

  submit(id: string, priority: number): void {
    this.queue.push({ id, priority, attempts: 0 });
  }

  fail(job: Job): boolean {
    job.attempts += 1;
    if (!shouldRetry(job.attempts, this.maxAttempts)) {
      return false;
    }
    this.delays.push(backoffDelay(job.attempts, this.baseMs));
    this.queue.push(job);
    return true;
  }

  next(): Job {
    const job = this.queue.pop();
    if (!job) {
      throw new Error('queue is empty');
    }
    return job;
  }
}
"#,
        ),
        (
            "test/scheduler.test.ts",
            r#"import { Scheduler } from '../src/scheduler';

test('highest priority first', () => {
  const s = new Scheduler(3, 100);
  s.submit('low', 1);
  s.submit('high', 5);
  expect(s.next().id).toBe('high');
});

test('retries with backoff', () => {
  const s = new Scheduler(3, 100);
  s.submit('a', 1);
  const job = s.next();
  s.fail(job);
  s.fail(job);
  expect(s.delays).toEqual([100, 200]);
});

test('gives up after max attempts', () => {
  const s = new Scheduler(2, 100);
  s.submit('a', 1);
  const job = s.next();
  expect(s.fail(job)).toBe(true);
  expect(s.fail(job)).toBe(false);
});
"#,
        ),
    ],
    noise_before: (
        "src/retry.ts",
        "\nexport function jitter(ms: number): number {\n  return ms;\n}\n",
    ),
    noise_after: (
        "src/queue.ts",
        "\nexport function emptyQueue(): JobQueue {\n  return new JobQueue();\n}\n",
    ),
};

pub const CASES: &[Case] = &[
    Case {
        name: "js-sum-past-end",
        kind: "off-by-one",
        project: &CART,
        bug: &[("src/money.js", "i < values.length", "i <= values.length")],
        evidence: r#"FAIL test/cart.test.js
  ● merges lines

    expect(received).toBe(expected) // Object.is equality

    Expected: 20
    Received: NaN

      13 |   c.add('A', 10);
      14 |   expect(c.lines.length).toBe(1);
    > 15 |   expect(c.subtotal()).toBe(20);
         |                        ^

      at Object.<anonymous> (test/cart.test.js:{L:test/cart.test.js#expect(c.subtotal()).toBe(20)}:24)
"#,
    },
    Case {
        name: "js-coupon-lookup-inverted",
        kind: "wrong condition",
        project: &CART,
        bug: &[(
            "src/coupons.js",
            "  if (!(key in COUPONS)) {",
            "  if (key in COUPONS) {",
        )],
        evidence: r#"FAIL test/cart.test.js
  ● total with coupon

    expect(received).toBe(expected) // Object.is equality

    Expected: 18
    Received: 20

      at Object.<anonymous> (test/cart.test.js:{L:test/cart.test.js#expect(c.total('save10')).toBe(18)}:29)
"#,
    },
    Case {
        name: "js-apply-null-coupon",
        kind: "missing case",
        project: &CART,
        bug: &[(
            "src/coupons.js",
            "  if (!coupon) {\n    return total;\n  }\n",
            "",
        )],
        evidence: r#"FAIL test/cart.test.js
  ● no coupon

    TypeError: Cannot read properties of null (reading 'rate')

      at applyCoupon (src/coupons.js:{L:src/coupons.js#return total * (1 - coupon.rate)}:30)
      at Cart.total (src/cart.js:{L:src/cart.js#return roundCents(applyCoupon}:12)
      at Object.<anonymous> (test/cart.test.js:{L:test/cart.test.js#expect(c.total()).toBe(10)}:12)
"#,
    },
    Case {
        name: "js-receipt-unit-price",
        kind: "wrong call",
        project: &CART,
        bug: &[(
            "src/format.js",
            "formatPrice(l.price * l.qty)",
            "formatPrice(l.price)",
        )],
        evidence: r#"FAIL test/cart.test.js
  ● receipt

    expect(received).toBe(expected) // Object.is equality

    Expected: "A x2 $5.00"
    Received: "A x2 $2.50"

      at Object.<anonymous> (test/cart.test.js:{L:test/cart.test.js#expect(receipt(c))}:22)
"#,
    },
    Case {
        name: "js-round-cents-scale",
        kind: "wrong constant, fault two calls away",
        project: &CART,
        bug: &[(
            "src/money.js",
            "Math.round(x * 100) / 100",
            "Math.round(x * 100) / 10",
        )],
        evidence: r#"FAIL test/cart.test.js
  ● total with coupon

    expect(received).toBe(expected) // Object.is equality

    Expected: 18
    Received: 180

      at Object.<anonymous> (test/cart.test.js:{L:test/cart.test.js#expect(c.total('save10')).toBe(18)}:29)
"#,
    },
    Case {
        name: "ts-priority-order",
        kind: "wrong condition",
        project: &SCHEDULER,
        bug: &[(
            "src/queue.ts",
            "b.priority - a.priority",
            "a.priority - b.priority",
        )],
        evidence: r#"FAIL test/scheduler.test.ts
  ● highest priority first

    expect(received).toBe(expected) // Object.is equality

    Expected: "high"
    Received: "low"

      at Object.<anonymous> (test/scheduler.test.ts:{L:test/scheduler.test.ts#expect(s.next().id)}:23)
"#,
    },
    Case {
        name: "ts-backoff-exponent",
        kind: "off-by-one",
        project: &SCHEDULER,
        bug: &[(
            "src/retry.ts",
            "Math.pow(2, attempt - 1)",
            "Math.pow(2, attempt)",
        )],
        evidence: r#"FAIL test/scheduler.test.ts
  ● retries with backoff

    expect(received).toEqual(expected) // deep equality

    - Expected  - 2
    + Received  + 2

      Array [
    -   100,
    -   200,
    +   200,
    +   400,
      ]

      at Object.<anonymous> (test/scheduler.test.ts:{L:test/scheduler.test.ts#expect(s.delays)}:21)
"#,
    },
    Case {
        name: "ts-retry-limit",
        kind: "wrong condition",
        project: &SCHEDULER,
        bug: &[(
            "src/retry.ts",
            "return attempts < maxAttempts;",
            "return attempts <= maxAttempts;",
        )],
        evidence: r#"FAIL test/scheduler.test.ts
  ● gives up after max attempts

    expect(received).toBe(expected) // Object.is equality

    Expected: false
    Received: true

      at Object.<anonymous> (test/scheduler.test.ts:{L:test/scheduler.test.ts#expect(s.fail(job)).toBe(false)}:24)
"#,
    },
    Case {
        name: "ts-backoff-arguments-swapped",
        kind: "wrong call",
        project: &SCHEDULER,
        bug: &[(
            "src/scheduler.ts",
            "backoffDelay(job.attempts, this.baseMs)",
            "backoffDelay(this.baseMs, job.attempts)",
        )],
        evidence: r#"FAIL test/scheduler.test.ts
  ● retries with backoff

    expect(received).toEqual(expected) // deep equality

    - Expected  - 2
    + Received  + 2

      Array [
    -   100,
    -   200,
    +   6.338253001141147e+29,
    +   1.2676506002282294e+30,
      ]

      at Object.<anonymous> (test/scheduler.test.ts:{L:test/scheduler.test.ts#expect(s.delays)}:21)
"#,
    },
];
