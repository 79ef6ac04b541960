package dgram

import (
	"testing"

	"github.com/gamegate/gamegate/internal/testutil"
)

func TestSocketConfigValidate(t *testing.T) {
	testutil.CheckValidate(t, []testutil.ValidateCase{
		{Name: "defaults", Validate: (&SocketConfig{}).Validate},
		{Name: "at the bounds", Validate: (&SocketConfig{Readers: MaxReaders, Batch: 1, ReadBuffer: MaxSocketBuffer, WriteBuffer: 1}).Validate},
		{Name: "readers negative", Validate: (&SocketConfig{Readers: -1}).Validate, Want: "readers must be in [1, 1024], not -1"},
		{Name: "batch too large", Validate: (&SocketConfig{Batch: MaxBatch + 1}).Validate, Want: "batch must be in [1, 1024], not 1025"},
		{Name: "read_buffer too large", Validate: (&SocketConfig{ReadBuffer: MaxSocketBuffer + 1}).Validate, Want: "read_buffer must be in [1, 1073741824]"},
		{Name: "write_buffer negative", Validate: (&SocketConfig{WriteBuffer: -1}).Validate, Want: "write_buffer must be in [1, 1073741824], not -1"},
	})
	got := SocketConfig{}.WithDefaults()
	if got.Readers < 1 || got.Batch != DefaultBatch || got.ReadBuffer != DefaultSocketBuffer || got.WriteBuffer != DefaultSocketBuffer {
		t.Errorf("WithDefaults: got %+v, want every option at its default", got)
	}
	if got := (SocketConfig{Batch: 3}).WithDefaults().Batch; got != 3 {
		t.Errorf("WithDefaults: batch %d given 3, want 3", got)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("WithDefaults: %v, want defaults within their ranges", err)
	}
}
