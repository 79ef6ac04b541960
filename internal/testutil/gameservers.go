package testutil

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Where Debian's packages install the real servers below; scripts/peers
// installs them.
const (
	MurmurPath    = "/usr/sbin/murmurd"
	OpenTTDPath   = "/usr/games/openttd"
	TeeworldsPath = "/usr/games/teeworlds-server"
)

// peerDir makes a temporary folder for a real server, removed when the
// test ends.
func peerDir(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gamegate-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitPeer polls ready until it holds, failing the test with the server's
// output when the server exits first or the bound passes.
func waitPeer(t testing.TB, name string, exited <-chan struct{}, out *bytes.Buffer, bound time.Duration, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for pause := 10 * time.Millisecond; !ready(); pause = min(2*pause, 200*time.Millisecond) {
		select {
		case <-exited:
			t.Fatalf("%s exited at start:\n%s", name, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %v", name, bound)
		}
		time.Sleep(pause)
	}
}

// askUDP sends req to addr and returns the first answer within timeout.
func askUDP(addr string, req []byte, timeout time.Duration) []byte {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return nil
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(req); err != nil {
		return nil
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

// StartMurmur runs Debian's mumble-server (Murmur) on a free loopback port
// (TCP and UDP) with a limit of users, until the test ends, and returns its
// address once it answers the UDP ping. Under root it runs as nobody.
func StartMurmur(t testing.TB, users int) string {
	t.Helper()
	RequireDebianPeer(t, MurmurPath, "mumble-server")
	dir := peerDir(t, "murmur")
	addr := FreeUDPAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	ini := fmt.Sprintf("port=%s\nhost=%s\ndatabase=%s\nusers=%d\nwelcometext=\nlogfile=\n",
		port, host, filepath.Join(dir, "m.sqlite"), users)
	if err := os.WriteFile(filepath.Join(dir, "murmur.ini"), []byte(ini), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(MurmurPath, "-ini", filepath.Join(dir, "murmur.ini"), "-fg")
	cmd.Dir = dir
	var out bytes.Buffer
	exited := startPeer(t, cmd, &out, dir)
	ping := []byte{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}
	waitPeer(t, "murmurd", exited, &out, 30*time.Second, func() bool { return len(askUDP(addr, ping, 200*time.Millisecond)) == 24 })
	return addr
}

// OpenTTDSettings are what StartOpenTTD writes into the server's
// openttd.cfg.
type OpenTTDSettings struct {
	Name         string // [network] server_name
	MaxClients   int    // [network] max_clients
	MaxCompanies int    // [network] max_companies
	StartingYear int    // [game_creation] starting_year
	MapX, MapY   int    // [game_creation] map_x, map_y: log2 of the map's sides
	Landscape    string // [game_creation] landscape: temperate, arctic, tropic, toyland
}

// StartOpenTTD runs Debian's openttd as a dedicated server (-D) on a free
// loopback port with settings, its HOME in a temporary folder, until the
// test ends, and returns its address once it answers the game-info
// request over TCP (after generating its map). Under root it runs as
// nobody.
func StartOpenTTD(t testing.TB, s OpenTTDSettings) string {
	t.Helper()
	RequireDebianPeer(t, OpenTTDPath, "openttd")
	dir := peerDir(t, "openttd")
	cfgDir := filepath.Join(dir, ".config", "openttd")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("[network]\nserver_name = %s\nmax_clients = %d\nmax_companies = %d\nserver_advertise = false\n\n"+
		"[game_creation]\nstarting_year = %d\nmap_x = %d\nmap_y = %d\nlandscape = %s\n",
		s.Name, s.MaxClients, s.MaxCompanies, s.StartingYear, s.MapX, s.MapY, s.Landscape)
	if err := os.WriteFile(filepath.Join(cfgDir, "openttd.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := FreeTCPAddr(t)
	cmd := exec.Command(OpenTTDPath, "-D", addr)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "XDG_DATA_HOME="+filepath.Join(dir, ".local", "share"))
	var out bytes.Buffer
	exited := startPeer(t, cmd, &out, dir, filepath.Join(dir, ".config"), cfgDir)
	waitPeer(t, "openttd", exited, &out, 60*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		var head [3]byte
		_, err = c.Write([]byte{3, 0, 7})
		if err == nil {
			_, err = io.ReadFull(c, head[:])
		}
		return err == nil && head[2] == 6
	})
	return addr
}

// TeeworldsSettings are what StartTeeworlds writes into the server's
// configuration file.
type TeeworldsSettings struct {
	Name        string // sv_name
	MaxClients  int    // sv_max_clients
	PlayerSlots int    // sv_player_slots
	Map         string // sv_map
	GameType    string // sv_gametype: dm, tdm, ctf…
	Password    string // password, when not empty
}

// StartTeeworlds runs Debian's teeworlds-server (0.7) on a free loopback
// UDP port with settings (bindaddr 127.0.0.1, sv_register 0), from the
// configuration's folder (the server opens -f relative to its storage
// paths), until the test ends, and returns its address once it answers a
// token request. Under root it runs as nobody.
func StartTeeworlds(t testing.TB, s TeeworldsSettings) string {
	t.Helper()
	RequireDebianPeer(t, TeeworldsPath, "teeworlds-server")
	dir := peerDir(t, "teeworlds")
	addr := FreeUDPAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cfg := fmt.Sprintf("bindaddr 127.0.0.1\nsv_port %s\nsv_name %q\nsv_max_clients %d\nsv_player_slots %d\nsv_map %s\nsv_gametype %s\nsv_register 0\n",
		port, s.Name, s.MaxClients, s.PlayerSlots, s.Map, s.GameType)
	if s.Password != "" {
		cfg += fmt.Sprintf("password %q\n", s.Password)
	}
	if err := os.WriteFile(filepath.Join(dir, "tee.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(TeeworldsPath, "-f", "tee.cfg")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var out bytes.Buffer
	exited := startPeer(t, cmd, &out, dir)
	// A token request (its control header, NET_CTRLMSG_TOKEN, a token,
	// padding to 512 bytes) is answered with the server's token.
	req := append([]byte{4, 0, 0, 0xff, 0xff, 0xff, 0xff, 5, 1, 2, 3, 4}, make([]byte, 508)...)
	waitPeer(t, "teeworlds-server", exited, &out, 30*time.Second, func() bool { return len(askUDP(addr, req, 200*time.Millisecond)) == 12 })
	return addr
}

// JoinMurmur connects a Mumble user named name to the Murmur at addr, as
// Mumble's client does (TLS, then the Version and Authenticate messages:
// a 16-bit type, a 32-bit length and a protobuf body each), and returns
// once the server has synchronised it (ServerSync): the server counts it
// among its users until the test ends. The test server's certificate is
// self-signed, so it is not verified.
func JoinMurmur(t testing.TB, addr, name string) {
	t.Helper()
	const (
		typeVersion      = 0
		typeAuthenticate = 2
		typeServerSync   = 5
	)
	message := func(b []byte, typ uint16, body []byte) []byte {
		b = binary.BigEndian.AppendUint16(b, typ)
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		return append(b, body...)
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("joining %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	// Version{version: 1.3.4}, Authenticate{username: name, opus: true}.
	version := binary.AppendUvarint([]byte{0x08}, 1<<16|3<<8|4)
	auth := append(append([]byte{0x0a, byte(len(name))}, name...), 0x28, 1)
	if _, err := c.Write(message(message(nil, typeVersion, version), typeAuthenticate, auth)); err != nil {
		t.Fatalf("joining %s: %v", addr, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var head [6]byte
		if _, err := io.ReadFull(c, head[:]); err != nil {
			t.Fatalf("joining %s as %s: no ServerSync: %v", addr, name, err)
		}
		n := int64(binary.BigEndian.Uint32(head[2:]))
		if _, err := io.CopyN(io.Discard, c, n); err != nil {
			t.Fatalf("joining %s: %v", addr, err)
		}
		if binary.BigEndian.Uint16(head[:]) == typeServerSync {
			break
		}
	}
	// Keep the connection for the test, reading (and dropping) what the
	// server sends; it ends at the test's cleanup.
	_ = c.SetReadDeadline(time.Time{})
	go func() { _, _ = io.Copy(io.Discard, c) }()
}

// ConnectTeeworlds connects a client to the Teeworlds 0.7 server at addr
// at the network level, as the game's client begins (a token exchange,
// then NET_CTRLMSG_CONNECT with both tokens, padded to 512 data bytes),
// and returns once the server accepts it. It sends nothing more: the
// server lists it as a client "(connecting)" until it drops it for
// silence, or the test ends.
func ConnectTeeworlds(t testing.TB, addr string) {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const myToken = 0x0badcafe
	control := func(to uint32, msg byte) []byte {
		b := binary.BigEndian.AppendUint32([]byte{4, 0, 0}, to)
		b = binary.BigEndian.AppendUint32(append(b, msg), myToken)
		return append(b, make([]byte, 508)...)
	}
	ask := func(req []byte, want byte) []byte {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2048)
		for {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("connecting to %s: %v", addr, err)
			}
			if n >= 8 && buf[0] == 4 && binary.BigEndian.Uint32(buf[3:]) == myToken && buf[7] == want {
				return buf[:n]
			}
		}
	}
	const ctrlConnect, ctrlAccept, ctrlToken = 1, 2, 5
	answer := ask(control(0xFFFFFFFF, ctrlToken), ctrlToken)
	if len(answer) < 12 {
		t.Fatalf("connecting to %s: token answer %x", addr, answer)
	}
	ask(control(binary.BigEndian.Uint32(answer[8:]), ctrlConnect), ctrlAccept)
}
