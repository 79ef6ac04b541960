package dgram

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr: Go lays it out as C does (on 64-bit systems
// the trailing padding follows from Msghdr's alignment).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// mmsgIO reads and writes batches with recvmmsg and sendmmsg on the
// socket's own file descriptor, through the runtime's poller. Its calls
// are raw system calls: each asks for MSG_DONTWAIT (the poller waits, not
// the call; the socket's own non-blocking mode is a flag of its file,
// which whoever holds a dup of it can clear), so they return at once,
// where a raw call blocked in the kernel would hold its thread and
// processor, past any deadline and through the garbage collector's
// stops. A call through syscall.Syscall
// would tell the scheduler it may block. That costs more than the call's
// own entry, and worse: a process whose threads had all gone idle wakes
// the runtime's monitor thread on its first such call, which then polls
// every 20µs for a millisecond or more. A server that idles between bursts
// of datagrams spent a tenth of its CPU time there. Unlike
// golang.org/x/net's ReadBatch, which allocates a *net.UDPAddr for each
// datagram it reads, it decodes source addresses from socket addresses of
// its own into netip.AddrPort values: with everything allocated once,
// reading and writing allocate nothing.
type mmsgIO struct {
	rc syscall.RawConn
	v6 bool // an AF_INET6 socket (IPv4 peers appear as mapped addresses)

	rh, wh       []mmsghdr
	riov, wiov   []unix.Iovec
	rname, wname []unix.RawSockaddrInet6
	// gso: the kernel sends a group of datagrams to one address in one
	// pass (UDP_SEGMENT); wctrl holds each write header's control message
	// for it, and wend the index after the last datagram of each header.
	gso   bool
	wctrl []uint64
	wend  []int

	// One system call's arguments and results, for the functions the
	// poller calls (bound once, so that passing them allocates nothing).
	hs           []mmsghdr
	done         int
	errno        syscall.Errno
	recvF, sendF func(fd uintptr) bool
	// waited: this read has found the socket empty and waited for it.
	waited bool
	// call names the system call that set errno, for its error.
	call string
	// probe: the last read waited, so this one reads one datagram;
	// probeSkips: wakes to go before probing again, after a probe found a
	// datagram.
	probe      bool
	probeSkips int
	// The buffers the read vectors point to (in[0] and how many), and how
	// many headers the last read filled.
	rset    *message
	rsetN   int
	rfilled int
}

func newBatchIO(conn *net.UDPConn, batch int) (packetIO, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var domain int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		domain, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, serr
	}
	b := &mmsgIO{
		rc:    rc,
		v6:    domain == unix.AF_INET6,
		rh:    make([]mmsghdr, batch),
		wh:    make([]mmsghdr, batch),
		riov:  make([]unix.Iovec, batch),
		wiov:  make([]unix.Iovec, batch),
		rname: make([]unix.RawSockaddrInet6, batch),
		wname: make([]unix.RawSockaddrInet6, batch),
		wctrl: make([]uint64, batch*gsoCmsgWords),
		wend:  make([]int, batch),
	}
	if err := rc.Control(func(fd uintptr) {
		_, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
	}); err == nil && serr == nil {
		b.gso = true
	}
	for i := range batch {
		c := (*unix.Cmsghdr)(unsafe.Pointer(&b.wctrl[i*gsoCmsgWords]))
		c.Level, c.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
		c.SetLen(unix.CmsgLen(2))

		b.rh[i].hdr.Iov, b.wh[i].hdr.Iov = &b.riov[i], &b.wiov[i]
		b.rh[i].hdr.SetIovlen(1)
		b.wh[i].hdr.SetIovlen(1)
		b.rh[i].hdr.Name = (*byte)(unsafe.Pointer(&b.rname[i]))
		b.wh[i].hdr.Name = (*byte)(unsafe.Pointer(&b.wname[i]))
	}
	b.recvF, b.sendF = b.recvmmsg, b.sendmmsg
	return b, nil
}

// read reads into in's buffers. A reader reads into the same buffers every
// time, so their vectors are set once (setting a batch's 32 vectors on
// every read cost more than the rest of a lone read's own work), and before
// each read only the headers the last read filled are reset: the kernel
// takes a header's address length as the room for the source address and
// writes back the length it used, and sets its flags.
func (b *mmsgIO) read(in []message) (int, error) {
	n := min(len(in), len(b.rh))
	if n == 0 {
		return 0, nil
	}
	if b.rset != &in[0] || b.rsetN != n {
		for i := range n {
			b.riov[i].Base = &in[i].buf[0]
			b.riov[i].SetLen(len(in[i].buf))
			b.rh[i].hdr.Namelen = unix.SizeofSockaddrInet6
			b.rh[i].hdr.Flags = 0
		}
		b.rset, b.rsetN = &in[0], n
	} else {
		for i := range b.rfilled {
			b.rh[i].hdr.Namelen = unix.SizeofSockaddrInet6
			b.rh[i].hdr.Flags = 0
		}
	}
	b.hs = b.rh[:n]
	probed := b.probe
	b.waited = false
	b.rfilled = 1 // a failed call leaves the first header as it found it, or not
	if err := b.rc.Read(b.recvF); err != nil {
		return 0, err
	}
	if b.errno != 0 {
		return 0, os.NewSyscallError(b.call, b.errno)
	}
	b.rfilled = max(b.done, 1)
	// After a datagram that woke the reader, the next read takes one too:
	// with lone datagrams (one request in flight) it finds none, and
	// recvfrom finds that out for less than recvmmsg. If it finds one,
	// others are arriving together: the read after it takes a batch, and
	// the reads after the next probeBackoff wakes take batches at once.
	if probed && !b.waited {
		b.probeSkips = probeBackoff
	}
	b.probe = b.waited && b.probeSkips == 0
	if b.waited && b.probeSkips > 0 {
		b.probeSkips--
	}
	for i := range b.done {
		in[i].n = int(b.rh[i].n)
		in[i].addr = decodeSockaddr(&b.rname[i])
	}
	return b.done, nil
}

// write sends out, grouping the datagrams to one address where the kernel
// can send them in one pass (see group); it may reorder out, keeping the
// order of each address's datagrams, and returns how many of out, in its
// new order, it sent.
func (b *mmsgIO) write(out []message) (int, error) {
	out = out[:min(len(out), len(b.wh))]
	b.hs = b.wh[:b.frame(out, b.gso)]
	if err := b.rc.Write(b.sendF); err != nil {
		return 0, err
	}
	if b.errno != 0 && b.done == 0 && b.wend[0] > 1 {
		// The kernel refused the first group sent as one: a device that
		// cannot checksum segments (EIO: it never will), or a path whose
		// MTU the group's datagrams exceed. Send them one by one, which
		// the kernel fragments or refuses each for itself.
		if b.errno == unix.EIO {
			b.gso = false
		}
		b.hs = b.wh[:b.frame(out, false)]
		if err := b.rc.Write(b.sendF); err != nil {
			return 0, err
		}
	}
	sent := 0
	if b.done > 0 {
		sent = b.wend[b.done-1]
	}
	if b.errno != 0 {
		return sent, os.NewSyscallError(b.call, b.errno)
	}
	return sent, nil
}

// Sending a group of datagrams to one address in one pass (UDP generic
// segmentation offload, Linux 4.18): the kernel builds, routes and
// delivers one buffer and cuts it into datagrams of gso_size bytes, the
// last one shorter or equal, at the device or the NIC. Per datagram that
// saves most of the send path's work (on loopback, about half of it),
// which is most of a relay's CPU time. Each datagram arrives as it would
// alone.
const (
	// gsoMaxSize is the largest datagram sent in a group: what one
	// 1500-byte Ethernet frame carries over IPv6. The kernel refuses a
	// group whose datagrams exceed the path's MTU, where it would
	// fragment a lone datagram; larger ones are sent alone.
	gsoMaxSize = 1500 - 40 - 8
	// gsoMaxSegments is the most datagrams in a group the kernel takes
	// (UDP_MAX_SEGMENTS before Linux 6.9), and gsoMaxBytes the most bytes,
	// under what one IP packet can hold.
	gsoMaxSegments = 64
	gsoMaxBytes    = 65000
	// gsoCmsgWords is one UDP_SEGMENT control message's room, in words.
	gsoCmsgWords = (unix.SizeofCmsghdr + 8) / 8
)

// frame fills write headers for out, a group of datagrams per header
// where gso allows (group), and returns how many headers it filled.
func (b *mmsgIO) frame(out []message, gso bool) int {
	h := 0
	for i := 0; i < len(out); h++ {
		k := i + 1
		if gso {
			k = group(out, i)
		}
		for j := i; j < k; j++ {
			b.wiov[j].Base = unsafe.SliceData(out[j].buf)
			b.wiov[j].SetLen(out[j].n)
		}
		hdr := &b.wh[h].hdr
		hdr.Iov = &b.wiov[i]
		hdr.SetIovlen(k - i)
		hdr.Namelen = encodeSockaddr(&b.wname[h], out[i].addr, b.v6)
		if k-i > 1 {
			c := b.wctrl[h*gsoCmsgWords : (h+1)*gsoCmsgWords]
			*(*uint16)(unsafe.Add(unsafe.Pointer(&c[0]), unix.CmsgLen(0))) = uint16(out[i].n) // the segment size
			hdr.Control = (*byte)(unsafe.Pointer(&c[0]))
			hdr.SetControllen(unix.CmsgSpace(2))
		} else {
			hdr.Control = nil
			hdr.SetControllen(0)
		}
		b.wend[h] = k
		i = k
	}
	return h
}

// gsoLookahead is how far behind a datagram group looks for others to
// send with it.
const gsoLookahead = 2 * gsoMaxSegments

// group moves the datagrams after out[i] that can be sent with it in one
// pass right behind it, and returns the index after the group: datagrams
// to the same address of out[i]'s size, and one shorter to end it. It
// stops at a longer datagram to that address, so that each address's
// datagrams keep their order; those to other addresses keep theirs.
func group(out []message, i int) int {
	size := out[i].n
	if size == 0 || size > gsoMaxSize {
		return i + 1
	}
	limit := min(gsoMaxSegments, gsoMaxBytes/size)
	k := i + 1
	// The search looks gsoLookahead datagrams ahead at most: a batch of
	// replies to as many addresses (a flood from spoofed sources) costs
	// a bounded number of comparisons a datagram, not one per datagram
	// of the batch.
	for j := i + 1; j < len(out) && j-i <= gsoLookahead && k-i < limit; j++ {
		if out[j].addr != out[i].addr {
			continue
		}
		if out[j].n > size || out[j].n == 0 {
			break
		}
		m := out[j]
		copy(out[k+1:j+1], out[k:j])
		out[k] = m
		k++
		if m.n < size {
			break
		}
	}
	return k
}

// probeBackoff is how many wakes a reader takes batches after without
// probing, once a probe found a datagram (see read).
const probeBackoff = 64

// recvmmsg reads a batch; after the reader has waited for the socket, and
// in the read after that while such probes find nothing (see read), it
// reads one datagram only, with recvfrom. A
// reader woken for a datagram mostly finds that one alone, and recvmmsg
// asked for more tries the next and finds none: work before the reply that
// a lone datagram (one request in flight, the latency case) should not
// pay. If more did arrive, the read after takes them at once, without
// waiting.
func (b *mmsgIO) recvmmsg(fd uintptr) bool {
	var done bool
	if b.waited || b.probe {
		done = b.one(true, fd, &b.rh[0])
	} else {
		done = b.mmsg(unix.SYS_RECVMMSG, fd)
	}
	if !done {
		b.waited = true
	}
	return done
}

// sendmmsg sends b.hs, a lone datagram with sendto.
func (b *mmsgIO) sendmmsg(fd uintptr) bool {
	if len(b.hs) == 1 && b.hs[0].hdr.Controllen == 0 {
		return b.one(false, fd, &b.wh[0])
	}
	return b.mmsg(unix.SYS_SENDMMSG, fd)
}

// one makes one call of recvfrom (recv) or sendto for the datagram h
// describes, and reports whether it is done as mmsg does: for a lone
// datagram they cost less than recvmmsg or sendmmsg, which copy in the
// message header and its vector first.
func (b *mmsgIO) one(recv bool, fd uintptr, h *mmsghdr) bool {
	for {
		var n uintptr
		var errno syscall.Errno
		if recv {
			b.call = "recvfrom"
			n, _, errno = unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(h.hdr.Iov.Base)), uintptr(h.hdr.Iov.Len), unix.MSG_DONTWAIT,
				uintptr(unsafe.Pointer(h.hdr.Name)), uintptr(unsafe.Pointer(&h.hdr.Namelen)))
		} else {
			b.call = "sendto"
			n, _, errno = unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(h.hdr.Iov.Base)), uintptr(h.hdr.Iov.Len), unix.MSG_DONTWAIT,
				uintptr(unsafe.Pointer(h.hdr.Name)), uintptr(h.hdr.Namelen))
		}
		if retry, done := b.settle(n, errno, h); !retry {
			return done
		}
	}
}

// mmsg makes one call of recvmmsg or sendmmsg on b.hs, and reports whether
// it is done (false: the socket is not ready, wait for the poller).
func (b *mmsgIO) mmsg(trap, fd uintptr) bool {
	b.call = "recvmmsg"
	if trap == unix.SYS_SENDMMSG {
		b.call = "sendmmsg"
	}
	for {
		n, _, errno := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&b.hs[0])), uintptr(len(b.hs)), unix.MSG_DONTWAIT, 0, 0)
		if retry, done := b.settle(n, errno, nil); !retry {
			return done
		}
	}
}

// settle records what a call of one or mmsg returned (n: the length of
// h's datagram, or with h nil how many datagrams), and reports whether to
// make the call again (EINTR) and whether it is done (false: the socket is
// not ready, wait for the poller).
func (b *mmsgIO) settle(n uintptr, errno syscall.Errno, h *mmsghdr) (retry, done bool) {
	switch errno {
	case unix.EINTR:
		return true, false
	case unix.EAGAIN:
		return false, false
	case 0:
		b.done, b.errno = int(n), 0
		if h != nil {
			h.n, b.done = uint32(n), 1
		}
	default:
		b.done, b.errno = 0, errno
	}
	return false, true
}

// decodeSockaddr returns the address and port of a struct sockaddr_in or
// sockaddr_in6, with no allocation but for a zone (a scoped IPv6 address,
// named by its interface index).
func decodeSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p := uint16(port[0])<<8 | uint16(port[1])
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), p)
	case unix.AF_INET6:
		a := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(sa.Scope_id), 10))
		}
		return netip.AddrPortFrom(a, p)
	}
	return netip.AddrPort{}
}

// encodeSockaddr writes to into sa for a socket of the given family and
// returns its length. On an IPv4 socket an IPv6 destination cannot be
// written: the kernel refuses the datagram (EAFNOSUPPORT), which is
// counted as a failed write.
func encodeSockaddr(sa *unix.RawSockaddrInet6, to netip.AddrPort, v6 bool) uint32 {
	a := to.Addr()
	*sa = unix.RawSockaddrInet6{}
	port := (*[2]byte)(unsafe.Pointer(&sa.Port))
	port[0], port[1] = byte(to.Port()>>8), byte(to.Port())
	if !v6 && a.Unmap().Is4() {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		sa4.Addr = a.Unmap().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family = unix.AF_INET6
	sa.Addr = a.As16()
	if z := a.Zone(); z != "" {
		sa.Scope_id = zoneIndex(z)
	}
	return unix.SizeofSockaddrInet6
}

// zoneIndex returns the interface index a zone names (a number, as
// decodeSockaddr writes them, or an interface name), 0 if none.
func zoneIndex(zone string) uint32 {
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n)
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	return 0
}
