//! A small bank ledger in Go.

use super::{Case, Project};

pub const PROJECT: Project = Project {
    name: "go-ledger",
    files: &[
        ("go.mod", "module example.com/ledger\n\ngo 1.22\n"),
        (
            "ledger/account.go",
            r#"package ledger

import "errors"

var ErrInsufficient = errors.New("insufficient funds")
var ErrUnknown = errors.New("unknown account")

type Account struct {
	ID      string
	Balance int64
	History []int64
}

func (a *Account) Deposit(amount int64) {
	a.Balance += amount
	a.History = append(a.History, amount)
}

func (a *Account) Withdraw(amount int64) error {
	if amount > a.Balance {
		return ErrInsufficient
	}
	a.Balance -= amount
	a.History = append(a.History, -amount)
	return nil
}

func (a *Account) LastN(n int) []int64 {
	if n > len(a.History) {
		n = len(a.History)
	}
	return a.History[len(a.History)-n:]
}
"#,
        ),
        (
            "ledger/transfer.go",
            r#"package ledger

type Bank struct {
	accounts map[string]*Account
}

func NewBank() *Bank {
	return &Bank{accounts: map[string]*Account{}}
}

func (b *Bank) Open(id string) *Account {
	acc := &Account{ID: id}
	b.accounts[id] = acc
	return acc
}

func (b *Bank) Get(id string) *Account {
	return b.accounts[id]
}

func (b *Bank) Transfer(from, to string, amount int64) error {
	src := b.Get(from)
	dst := b.Get(to)
	if src == nil || dst == nil {
		return ErrUnknown
	}
	if err := src.Withdraw(amount); err != nil {
		return err
	}
	dst.Deposit(amount)
	return nil
}

func (b *Bank) Total() int64 {
	var total int64
	for _, a := range b.accounts {
		total += a.Balance
	}
	return total
}
"#,
        ),
        (
            "ledger/parse.go",
            r#"package ledger

import (
	"strconv"
	"strings"
)

func ParseAmount(s string) (int64, error) {
	s = strings.TrimSpace(s)
	parts := strings.SplitN(s, ".", 2)
	whole, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return 0, err
	}
	cents := int64(0)
	if len(parts) == 2 {
		cents, err = strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return 0, err
		}
	}
	return whole*100 + cents, nil
}
"#,
        ),
        (
            "ledger/ledger_test.go",
            r#"package ledger

import "testing"

func TestTransfer(t *testing.T) {
	b := NewBank()
	b.Open("a").Deposit(100)
	b.Open("b")
	if err := b.Transfer("a", "b", 40); err != nil {
		t.Fatal(err)
	}
	if got := b.Get("b").Balance; got != 40 {
		t.Errorf("b balance = %d, want 40", got)
	}
}

func TestWithdrawAll(t *testing.T) {
	a := &Account{ID: "x"}
	a.Deposit(50)
	if err := a.Withdraw(50); err != nil {
		t.Errorf("withdraw all: %v", err)
	}
}

func TestLastN(t *testing.T) {
	a := &Account{ID: "x"}
	a.Deposit(1)
	a.Deposit(2)
	a.Deposit(3)
	got := a.LastN(2)
	if len(got) != 2 || got[0] != 2 {
		t.Errorf("LastN(2) = %v", got)
	}
}

func TestParseAmount(t *testing.T) {
	got, err := ParseAmount("12.34")
	if err != nil || got != 1234 {
		t.Errorf("ParseAmount = %d, %v", got, err)
	}
}

func TestTransferToUnknown(t *testing.T) {
	b := NewBank()
	b.Open("a").Deposit(10)
	if err := b.Transfer("a", "zz", 5); err == nil {
		t.Error("want error for unknown account")
	}
}
"#,
        ),
    ],
    noise_before: (
        "ledger/parse.go",
        "\nfunc FormatAmount(c int64) string {\n\treturn strconv.FormatInt(c/100, 10) + \".\" + strconv.FormatInt(c%100, 10)\n}\n",
    ),
    noise_after: (
        "ledger/transfer.go",
        "\nfunc (b *Bank) Count() int {\n\treturn len(b.accounts)\n}\n",
    ),
};

pub const CASES: &[Case] = &[
    Case {
        name: "go-withdraw-all",
        kind: "wrong condition",
        project: &PROJECT,
        bug: &[(
            "ledger/account.go",
            "\tif amount > a.Balance {",
            "\tif amount >= a.Balance {",
        )],
        evidence: r#"=== RUN   TestWithdrawAll
    ledger_test.go:{L:ledger/ledger_test.go#withdraw all}: withdraw all: insufficient funds
--- FAIL: TestWithdrawAll (0.00s)
FAIL
FAIL	example.com/ledger/ledger	0.004s
"#,
    },
    Case {
        name: "go-last-n-slice",
        kind: "off-by-one",
        project: &PROJECT,
        bug: &[(
            "ledger/account.go",
            "a.History[len(a.History)-n:]",
            "a.History[len(a.History)-n-1:]",
        )],
        evidence: r#"=== RUN   TestLastN
    ledger_test.go:{L:ledger/ledger_test.go#LastN(2) = %v}: LastN(2) = [1 2 3]
--- FAIL: TestLastN (0.00s)
FAIL
FAIL	example.com/ledger/ledger	0.003s
"#,
    },
    Case {
        name: "go-transfer-unknown-account",
        kind: "missing case, crash in a callee",
        project: &PROJECT,
        bug: &[(
            "ledger/transfer.go",
            "\tif src == nil || dst == nil {\n\t\treturn ErrUnknown\n\t}\n",
            "",
        )],
        evidence: r#"=== RUN   TestTransferToUnknown
--- FAIL: TestTransferToUnknown (0.00s)
panic: runtime error: invalid memory address or nil pointer dereference [recovered]
	panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x10 pc=0x4f1c2a]

goroutine 7 [running]:
testing.tRunner.func1.2({0x5103a0, 0x6b2f50})
	/usr/local/go/src/testing/testing.go:1632 +0x230
panic({0x5103a0?, 0x6b2f50?})
	/usr/local/go/src/runtime/panic.go:785 +0x132
example.com/ledger/ledger.(*Account).Deposit(...)
	/home/ci/src/ledger/ledger/account.go:{L:ledger/account.go#a.Balance += amount}
example.com/ledger/ledger.(*Bank).Transfer(0xc000012345, {0x5234e1, 0x1}, {0x5234e2, 0x2}, 0x5)
	/home/ci/src/ledger/ledger/transfer.go:{L:ledger/transfer.go#dst.Deposit(amount)} +0x9c
example.com/ledger/ledger.TestTransferToUnknown(0xc0000a6680)
	/home/ci/src/ledger/ledger/ledger_test.go:{L:ledger/ledger_test.go#b.Transfer("a", "zz", 5)} +0x6b
testing.tRunner(0xc0000a6680, 0x54d0b8)
	/usr/local/go/src/testing/testing.go:1690 +0xf4
FAIL	example.com/ledger/ledger	0.005s
"#,
    },
    Case {
        name: "go-transfer-wrong-account",
        kind: "wrong call",
        project: &PROJECT,
        bug: &[(
            "ledger/transfer.go",
            "\tdst.Deposit(amount)",
            "\tsrc.Deposit(amount)",
        )],
        evidence: r#"=== RUN   TestTransfer
    ledger_test.go:{L:ledger/ledger_test.go#b balance = %d}: b balance = 0, want 40
--- FAIL: TestTransfer (0.00s)
FAIL
FAIL	example.com/ledger/ledger	0.004s
"#,
    },
    Case {
        name: "go-parse-amount-scale",
        kind: "wrong constant",
        project: &PROJECT,
        bug: &[("ledger/parse.go", "whole*100 + cents", "whole*10 + cents")],
        evidence: r#"=== RUN   TestParseAmount
    ledger_test.go:{L:ledger/ledger_test.go#ParseAmount = %d}: ParseAmount = 154, <nil>
--- FAIL: TestParseAmount (0.00s)
FAIL
FAIL	example.com/ledger/ledger	0.002s
"#,
    },
];
