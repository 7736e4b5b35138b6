package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"plainkube.dev/plainkube/internal/server"
	"plainkube.dev/plainkube/internal/storage/etcd"
)

const etcdSnapshotUsage = `plainkube etcd-snapshot: snapshots of the server's embedded etcd (root).

  plainkube etcd-snapshot save [--name NAME]   a snapshot of the running server's etcd, into DATA/snapshots
  plainkube etcd-snapshot ls                   the snapshots in DATA/snapshots
  plainkube etcd-snapshot restore FILE         a new data directory (--data-dir, which must not hold
                                               etcd data yet) whose etcd holds what FILE held; then
                                               start plainkube server --data-dir on it

Each takes --data-dir (default: the server's). A snapshot holds the objects, not
the keys: copy the old DATA/encryption-config.yaml (without it the Secrets
cannot be read) and DATA/pki (the cluster's CA and keys, so nodes and tokens
stay valid) into the new data directory before its first start.
With an external etcd (--etcd-servers), use etcdctl snapshot save/restore.
`

// runEtcdSnapshot saves, lists and restores snapshots of the embedded etcd.
func runEtcdSnapshot(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Print(etcdSnapshotUsage)
		return nil
	}
	verb, args := args[0], args[1:]
	fl := flag.NewFlagSet("etcd-snapshot "+verb, flag.ExitOnError)
	dataDir := fl.String("data-dir", server.DefaultDataDir(), "the server's data directory")
	name := fl.String("name", "etcd-snapshot", "save: the snapshot's name, before its host and time")
	args = parseInterleaved(fl, args)
	snapshots := filepath.Join(*dataDir, "snapshots")
	switch verb {
	case "save":
		sock := filepath.Join(*dataDir, "etcd.sock")
		if _, err := os.Stat(sock); err != nil {
			return fmt.Errorf("no embedded etcd at %s (%w): is plainkube server running with --data-dir %s?", sock, err, *dataDir)
		}
		if err := os.MkdirAll(snapshots, 0o700); err != nil {
			return err
		}
		host, _ := os.Hostname()
		path := filepath.Join(snapshots, fmt.Sprintf("%s-%s-%d.db", *name, host, time.Now().Unix()))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		abs, err := filepath.Abs(sock)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "saving a snapshot of the etcd at %s…\n", abs)
		if err := etcd.SaveSnapshot(ctx, "unix://"+abs, path); err != nil {
			return err
		}
		fmt.Println(path)
		return nil
	case "ls", "list":
		entries, err := os.ReadDir(snapshots)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
		fmt.Fprintln(w, "NAME\tSIZE\tCREATED")
		for _, e := range entries {
			info, err := e.Info()
			if err != nil || !strings.HasSuffix(e.Name(), ".db") {
				continue
			}
			fmt.Fprintf(w, "%s\t%d\t%s\n", filepath.Join(snapshots, e.Name()), info.Size(), info.ModTime().UTC().Format(time.RFC3339))
		}
		return w.Flush()
	case "restore":
		if len(args) != 1 {
			return errors.New("etcd-snapshot restore takes one snapshot file")
		}
		if err := os.MkdirAll(*dataDir, 0o700); err != nil {
			return err
		}
		target := filepath.Join(*dataDir, "etcd")
		fmt.Fprintf(os.Stderr, "restoring %s into %s…\n", args[0], target)
		if err := etcd.RestoreSnapshot(args[0], target); err != nil {
			return err
		}
		fmt.Printf("restored %s into %s; start it with: plainkube server --data-dir %s\n", args[0], target, *dataDir)
		return nil
	}
	return fmt.Errorf("etcd-snapshot: unknown command %q\n\n%s", verb, etcdSnapshotUsage)
}
