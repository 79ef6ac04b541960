package freeciv

import (
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

func TestGuardConfigValidate(t *testing.T) {
	testutil.CheckValidate(t, []testutil.ValidateCase{
		{Name: "defaults", Validate: (&GuardConfig{}).Validate, Want: ""},
		{Name: "at the bounds", Validate: (&GuardConfig{MaxPacket: MaxMaxPacket, MaxChunk: MinMaxChunk, MaxDecompressed: MaxMaxChunk}).Validate, Want: ""},
		{Name: "packet too large", Validate: (&GuardConfig{MaxPacket: MaxMaxPacket + 1}).Validate, Want: "max_packet_size must be in [4, 16384], not 16385"},
		{Name: "packet negative", Validate: (&GuardConfig{MaxPacket: -1}).Validate, Want: "max_packet_size must be in [4, 16384], not -1"},
		{Name: "chunk too small", Validate: (&GuardConfig{MaxChunk: 8}).Validate, Want: "max_chunk_size must be in [16, 1073741824], not 8"},
		{Name: "decompressed negative", Validate: (&GuardConfig{MaxDecompressed: -1}).Validate, Want: "max_decompressed_size must be in [16, 1073741824], not -1"},
		{Name: "rate negative", Validate: (&GuardConfig{PacketRate: -1}).Validate, Want: "packet_rate must be a positive number"},
	})
	if got := (GuardConfig{}).WithDefaults().PacketBurst; got != DefaultPacketBurst {
		t.Errorf("WithDefaults: packet_burst %d, want %d", got, DefaultPacketBurst)
	}
	if got := (GuardConfig{PacketBurst: 3}).WithDefaults().PacketBurst; got != 3 {
		t.Errorf("WithDefaults: packet_burst %d given 3, want 3", got)
	}
}
