package dgram

import (
	"net"
	"net/netip"
)

// message is one datagram read or to write.
type message struct {
	buf  []byte
	n    int
	addr netip.AddrPort
}

// packetIO reads and writes datagrams in batches: read fills in[:n] and
// write sends out[:n]; an error concerns the datagram at n.
type packetIO interface {
	read(in []message) (int, error)
	write(out []message) (int, error)
}

// newPacketIO returns batched I/O where the platform has it and batch > 1,
// one datagram per system call otherwise.
func newPacketIO(conn *net.UDPConn, batch int) packetIO {
	if batch > 1 {
		if b, err := newBatchIO(conn, batch); err == nil {
			return b
		}
	}
	return singleIO{conn}
}

// singleIO reads and writes one datagram per system call, without
// allocating.
type singleIO struct{ conn *net.UDPConn }

func (s singleIO) read(in []message) (int, error) {
	n, addr, err := s.conn.ReadFromUDPAddrPort(in[0].buf)
	if err != nil {
		return 0, err
	}
	in[0].n, in[0].addr = n, addr
	return 1, nil
}

func (s singleIO) write(out []message) (int, error) {
	for i := range out {
		if _, err := s.conn.WriteToUDPAddrPort(out[i].buf[:out[i].n], out[i].addr); err != nil {
			return i, err
		}
	}
	return len(out), nil
}
