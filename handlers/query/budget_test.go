package query

import (
	"errors"
	"testing"
)

func TestBudgetSpend(t *testing.T) {
	b := Budget{MaxPackets: 2, MaxResponseSize: 1500}
	var s Spent
	if err := b.Spend(&s, 1000); err != nil {
		t.Fatal(err)
	}
	if err := b.Spend(&s, 501); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if err := b.Spend(&s, 500); err != nil {
		t.Fatal(err)
	}
	if err := b.Spend(&s, 0); !errors.Is(err, ErrTooManyPackets) {
		t.Fatalf("got %v, want ErrTooManyPackets", err)
	}
	var d Spent // the defaults: 16 datagrams, 64 KiB
	for range DefaultMaxPackets {
		if err := (&Budget{}).Spend(&d, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&Budget{}).Spend(&d, 1); !errors.Is(err, ErrTooManyPackets) {
		t.Fatalf("got %v after %d datagrams", err, d.Packets)
	}
	if err := (&Budget{MaxPackets: 129}).Validate(); err == nil {
		t.Fatal("max_packets 129 validated")
	}
}
