package proxy

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// hostListeners says whether a host process listens on a port (a TCP
// socket in LISTEN state, a bound UDP socket): a NodePort or
// load-balancer port that one of them holds is not taken over. /proc/net
// is read at the first question only, so that a sync of Services without
// node ports reads nothing.
func hostListeners() func(hostPort) bool {
	ports := sync.OnceValue(readHostListeners)
	return func(p hostPort) bool { return ports()[p] }
}

func readHostListeners() map[hostPort]bool {
	out := map[hostPort]bool{}
	for _, f := range []struct {
		path  string
		proto corev1.Protocol
		state string // the socket state that counts ("" = any)
	}{
		{"/proc/net/tcp", corev1.ProtocolTCP, "0A"},
		{"/proc/net/tcp6", corev1.ProtocolTCP, "0A"},
		{"/proc/net/udp", corev1.ProtocolUDP, ""},
		{"/proc/net/udp6", corev1.ProtocolUDP, ""},
	} {
		file, err := os.Open(f.path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(file)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || (f.state != "" && fields[3] != f.state) {
				continue
			}
			_, portHex, ok := strings.Cut(fields[1], ":")
			if !ok {
				continue
			}
			if port, err := strconv.ParseUint(portHex, 16, 16); err == nil && port != 0 {
				out[hostPort{f.proto, int32(port)}] = true
			}
		}
		file.Close()
	}
	return out
}
