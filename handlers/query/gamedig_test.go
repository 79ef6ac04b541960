package query

import "testing"

func TestGameDigReadings(t *testing.T) {
	for _, c := range []struct {
		in   string
		num  float64
		isN  bool
		pInt int
	}{
		{"12", 12, true, 12}, {" 7 ", 7, true, 7}, {"-3.5", -3.5, true, -3}, {"1e3", 1000, true, 1},
		{"0x1A", 26, true, 0}, {"12abc", 0, false, 12}, {"", 0, false, 0}, {"  ", 0, false, 0},
		{"Infinity", 0, false, 0}, {"inf", 0, false, 0}, {"1_000", 0, false, 1}, {"+5", 5, true, 5}, {".5", 0.5, true, 0},
	} {
		n, ok := Number(c.in)
		if n != c.num || ok != c.isN {
			t.Errorf("Number(%q): got %v %v, want %v %v", c.in, n, ok, c.num, c.isN)
		}
		if got := ParseInt(c.in); got != c.pInt {
			t.Errorf("ParseInt(%q): got %d, want %d", c.in, got, c.pInt)
		}
	}
	if !TrueTest("Yes") || !TrueTest("1") || TrueTest("2") || TrueTest("") {
		t.Error("TrueTest")
	}
}
