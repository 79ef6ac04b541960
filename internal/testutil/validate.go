package testutil

import (
	"strings"
	"testing"
)

// ValidateCase is a configuration and what its Validate must say: no
// error for a want of "", else an error containing want.
type ValidateCase struct {
	Name     string
	Validate func() error
	Want     string
}

// CheckValidate runs each case as a subtest.
func CheckValidate(t *testing.T, cases []ValidateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := c.Validate()
			switch {
			case c.Want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.Want != "" && (err == nil || !strings.Contains(err.Error(), c.Want)):
				t.Errorf("got %v, want an error containing %q", err, c.Want)
			}
		})
	}
}
