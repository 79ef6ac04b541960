package freeciv

import (
	"strings"
	"testing"
)

func TestGuardConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  GuardConfig
		want string // "" for valid
	}{
		{"defaults", GuardConfig{}, ""},
		{"at the bounds", GuardConfig{MaxPacket: MaxMaxPacket, MaxChunk: MinMaxChunk, MaxDecompressed: MaxMaxChunk}, ""},
		{"packet too large", GuardConfig{MaxPacket: MaxMaxPacket + 1}, "max_packet_size must be in [4, 16384], not 16385"},
		{"packet negative", GuardConfig{MaxPacket: -1}, "max_packet_size must be in [4, 16384], not -1"},
		{"chunk too small", GuardConfig{MaxChunk: 8}, "max_chunk_size must be in [16, 1073741824], not 8"},
		{"decompressed negative", GuardConfig{MaxDecompressed: -1}, "max_decompressed_size must be in [16, 1073741824], not -1"},
		{"rate negative", GuardConfig{PacketRate: -1}, "packet_rate must be a positive number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	if got := (GuardConfig{}).WithDefaults().PacketBurst; got != DefaultPacketBurst {
		t.Errorf("WithDefaults: packet_burst %d, want %d", got, DefaultPacketBurst)
	}
	if got := (GuardConfig{PacketBurst: 3}).WithDefaults().PacketBurst; got != 3 {
		t.Errorf("WithDefaults: packet_burst %d given 3, want 3", got)
	}
}
