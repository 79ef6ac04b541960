package dgram

import (
	"cmp"
	"runtime"

	"github.com/gamegate/gamegate/internal/bounds"
)

// The defaults and bounds of a SocketConfig's options.
const (
	// DefaultBatch is how many datagrams one system call reads or writes
	// when a Server, an Endpoint or a SocketConfig leaves Batch at 0.
	DefaultBatch = 32
	MaxBatch     = 1024
	MaxReaders   = 1024
	// DefaultSocketBuffer is the receive and send buffer WithDefaults asks
	// of the kernel for each socket, in bytes.
	DefaultSocketBuffer = 4 << 20
	MaxSocketBuffer     = 1 << 30
)

// SocketConfig is how the sockets of an address are read and sized: the
// options of a gamegate app's udp server, by their JSON and Caddyfile
// names.
type SocketConfig struct {
	// Readers per address, each on its own SO_REUSEPORT socket where the
	// platform has it (the kernel spreads sources across them), or sharing
	// one socket elsewhere, 1 to 1024. Default: one per CPU.
	Readers int `json:"readers,omitempty"`
	// Datagrams read or written per system call (recvmmsg/sendmmsg on
	// Linux), 1 to 1024; 1 turns batching off. Default: 32.
	Batch int `json:"batch,omitempty"`
	// Receive buffer of each socket, in bytes, 1 to 1 GiB. A burst larger
	// than this is dropped by the kernel before any reader sees it. If the
	// kernel grants less (net.core.rmem_max), a warning names the sysctl.
	// Default: 4 MiB.
	ReadBuffer int `json:"read_buffer,omitempty"`
	// Send buffer of each socket, in bytes (net.core.wmem_max), 1 to
	// 1 GiB. Default: 4 MiB.
	WriteBuffer int `json:"write_buffer,omitempty"`
}

// WithDefaults returns c with the default of every option left at 0.
func (c SocketConfig) WithDefaults() SocketConfig {
	c.Readers = cmp.Or(c.Readers, runtime.GOMAXPROCS(0))
	c.Batch = cmp.Or(c.Batch, DefaultBatch)
	c.ReadBuffer = cmp.Or(c.ReadBuffer, DefaultSocketBuffer)
	c.WriteBuffer = cmp.Or(c.WriteBuffer, DefaultSocketBuffer)
	return c
}

// Validate checks every option against its range; zero values (the
// defaults) pass.
func (c *SocketConfig) Validate() error {
	return bounds.First(
		bounds.Int("readers", c.Readers, 1, MaxReaders),
		bounds.Int("batch", c.Batch, 1, MaxBatch),
		bounds.Int("read_buffer", c.ReadBuffer, 1, MaxSocketBuffer),
		bounds.Int("write_buffer", c.WriteBuffer, 1, MaxSocketBuffer),
	)
}
