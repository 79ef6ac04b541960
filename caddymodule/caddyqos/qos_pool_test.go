package caddyqos

import (
	"slices"
	"testing"

	"github.com/gamegate/gamegate/handlers/qos"
)

// A table destroyed after a new one was made under its key (the pool
// forgets a key before destroying its table) must not take the new
// table's listener with it: the configuration after the next reload
// would not take that table over.
func TestDestroyedTableLeavesItsSuccessorsListener(t *testing.T) {
	set := listenerSet{byKey: make(map[string]tableListener)}
	old, successor := qos.NewSourceTable(8, nil, qos.SweepInterval), qos.NewSourceTable(8, nil, qos.SweepInterval)
	defer old.Destruct()
	defer successor.Destruct()
	set.add("k", "udp/127.0.0.1:3074", old)
	set.add("k", "udp/127.0.0.1:3074", successor) // made while old's Destruct is on its way
	set.remove("k", old)
	if got := set.list(); !slices.Equal(got, []string{"udp/127.0.0.1:3074"}) {
		t.Fatalf("after the old table's destruction: listeners %q, want the successor's", got)
	}
	set.remove("k", successor)
	if got := set.list(); len(got) != 0 {
		t.Fatalf("after the successor's destruction: listeners %q, want none", got)
	}
}
