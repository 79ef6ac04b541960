package gqp

import (
	"strings"
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

func TestQueryConfigValidate(t *testing.T) {
	testutil.CheckValidate(t, []testutil.ValidateCase{
		{Name: "defaults", Validate: (&QueryConfig{}).Validate, Want: ""},
		{Name: "status_command", Validate: (&QueryConfig{StatusCommand: "players"}).Validate, Want: ""},
		{Name: "status_command control", Validate: (&QueryConfig{StatusCommand: "players\x1e"}).Validate, Want: "status_command"},
		{Name: "status_command too long", Validate: (&QueryConfig{StatusCommand: strings.Repeat("a", 1500)}).Validate, Want: "status_command"},
		{Name: "pad_to", Validate: (&QueryConfig{PadTo: -1}).Validate, Want: "pad_to"},
	})
}
