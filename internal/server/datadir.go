package server

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"

	"plainkube.dev/plainkube/internal/storage/etcd"
)

// The data directory holds the cluster's keys and, in its embedded etcd,
// every object, Secrets included: only root may enter it. It is made 0700
// before anything is written, and an existing one is corrected at start.
func lockDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		log.Warn("the data directory was open to other users; it is 0700 now", "dir", dir, "was", fmt.Sprintf("%04o", perm))
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// maxSocketPath is the longest path a unix socket's address holds
// (sun_path is 108 bytes on Linux, with its NUL).
const maxSocketPath = 107

// embeddedEtcdListener makes the embedded etcd serve its clients on a unix
// socket in the data directory, which only root may enter, rather than on
// a loopback port any local process (or a pod on the host network) could
// reach. A data directory whose path is too long for a socket keeps the
// loopback port, with a warning.
func embeddedEtcdListener(dataDir string, log *slog.Logger) []etcd.EmbeddedOption {
	sock, err := filepath.Abs(filepath.Join(dataDir, "etcd.sock"))
	if err != nil || len(sock) > maxSocketPath {
		log.Warn("the data directory's path is too long for a unix socket: the embedded etcd listens on a 127.0.0.1 port, open to local processes", "socket", sock)
		return nil
	}
	return []etcd.EmbeddedOption{etcd.WithClientURL(url.URL{Scheme: "unix", Path: sock})}
}
