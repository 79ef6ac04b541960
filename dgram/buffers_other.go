//go:build !linux

package dgram

import "net"

// setBuffer asks for a socket buffer of want bytes. Other systems do not
// say portably what they granted, so it reports want.
func setBuffer(conn *net.UDPConn, want int, read bool) (int, error) {
	if read {
		return want, conn.SetReadBuffer(want)
	}
	return want, conn.SetWriteBuffer(want)
}
