package dgram

import (
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
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

func newPacketIO(conn *net.UDPConn, batch int) packetIO {
	if batch <= 1 {
		return singleIO{conn}
	}
	return newBatchIO(conn, batch)
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

// batchConn is what ipv4.PacketConn and ipv6.PacketConn have in common:
// recvmmsg and sendmmsg on Linux, one datagram per call elsewhere.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// batchIO reads and writes batches through x/net. Its messages and their
// addresses are allocated once; x/net allocates the source address of each
// datagram it reads.
type batchIO struct {
	bc    batchConn
	v6    bool
	rmsgs []ipv4.Message
	wmsgs []ipv4.Message
	waddr []net.UDPAddr
	wip   [][16]byte
}

func newBatchIO(conn *net.UDPConn, batch int) *batchIO {
	b := &batchIO{
		rmsgs: make([]ipv4.Message, batch),
		wmsgs: make([]ipv4.Message, batch),
		waddr: make([]net.UDPAddr, batch),
		wip:   make([][16]byte, batch),
	}
	if la, ok := conn.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
		b.v6 = true
		b.bc = ipv6.NewPacketConn(conn)
	} else {
		b.bc = ipv4.NewPacketConn(conn)
	}
	bufs := make([][]byte, 2*batch)
	for i := range b.rmsgs {
		b.rmsgs[i].Buffers = bufs[2*i : 2*i+1 : 2*i+1]
		b.wmsgs[i].Buffers = bufs[2*i+1 : 2*i+2 : 2*i+2]
		b.wmsgs[i].Addr = &b.waddr[i]
	}
	return b
}

func (b *batchIO) read(in []message) (int, error) {
	ms := b.rmsgs[:min(len(in), len(b.rmsgs))]
	for i := range ms {
		ms[i].Buffers[0] = in[i].buf
	}
	n, err := b.bc.ReadBatch(ms, 0)
	for i := range n {
		in[i].n = ms[i].N
		in[i].addr = addrPortOf(ms[i].Addr)
		ms[i].Addr = nil
	}
	return n, err
}

func (b *batchIO) write(out []message) (int, error) {
	ms := b.wmsgs[:min(len(out), len(b.wmsgs))]
	for i := range ms {
		ms[i].Buffers[0] = out[i].buf[:out[i].n]
		a := out[i].addr.Addr()
		if b.v6 || a.Is6() {
			b.wip[i] = a.As16()
			b.waddr[i].IP = b.wip[i][:]
		} else {
			v4 := a.As4()
			copy(b.wip[i][:4], v4[:])
			b.waddr[i].IP = b.wip[i][:4]
		}
		b.waddr[i].Port = int(out[i].addr.Port())
	}
	return b.bc.WriteBatch(ms, 0)
}

func addrPortOf(a net.Addr) netip.AddrPort {
	if u, ok := a.(*net.UDPAddr); ok {
		return u.AddrPort()
	}
	return netip.AddrPort{}
}
