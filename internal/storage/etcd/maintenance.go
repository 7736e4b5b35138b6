package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// Defragmentation thresholds: a member's database is defragmented once
// more than half of it, and at least this much, is free space left by
// compactions (defragmenting blocks the member's writes for a moment).
const defragMinFree = 64 << 20

// DefragmentIfFragmented defragments each member whose database is mostly
// free space, and reports which it defragmented.
func (s *Store) DefragmentIfFragmented(ctx context.Context) ([]string, error) {
	var done []string
	for _, ep := range s.client.Endpoints() {
		st, err := s.client.Status(ctx, ep)
		if err != nil {
			return done, err
		}
		free := st.DbSize - st.DbSizeInUse
		if free < defragMinFree || free < st.DbSize/2 {
			continue
		}
		if _, err := s.client.Defragment(ctx, ep); err != nil {
			return done, fmt.Errorf("defragmenting %s: %w", ep, err)
		}
		done = append(done, ep)
	}
	return done, nil
}

// Alarms reports etcd's raised alarms (NOSPACE: the backend quota is
// used up, and etcd takes only reads and deletes until space is freed,
// compacted and defragmented, and the alarm disarmed): nil when none.
func (s *Store) Alarms(ctx context.Context) error {
	resp, err := s.client.AlarmList(ctx)
	if err != nil {
		return err
	}
	var raised []string
	for _, a := range resp.Alarms {
		raised = append(raised, fmt.Sprintf("%s on member %x", a.Alarm, a.MemberID))
	}
	if len(raised) > 0 {
		return fmt.Errorf("etcd alarm: %s", strings.Join(raised, ", "))
	}
	return nil
}

// SaveSnapshot writes a consistent snapshot of the etcd member at
// endpoint (a unix:// or http:// URL) to path, mode 0600: written to a
// temporary file first and renamed once complete.
func SaveSnapshot(ctx context.Context, endpoint, path string) error {
	c, err := newClient([]string{endpoint}, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := c.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot of %s: %w", endpoint, err)
	}
	defer r.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return fmt.Errorf("snapshot of %s: %w", endpoint, err)
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// restoreRevisionBump is how far a restore moves the revision on, as
// upstream advises for restoring a Kubernetes etcd: every resourceVersion
// a client saw before is older than the restored store's, and marked
// compacted, so watchers list afresh instead of waiting for revisions
// that will never come.
const restoreRevisionBump = 1_000_000_000

// RestoreSnapshot makes dataDir (which must not exist) the data of a
// single embedded member holding what the snapshot at path held, for
// StartEmbedded to start.
func RestoreSnapshot(path, dataDir string) error {
	if _, err := os.Stat(dataDir); err == nil {
		return fmt.Errorf("%s exists: restore into a fresh data directory", dataDir)
	}
	cfg := embeddedConfig(dataDir)
	return snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath: path, Name: cfg.Name, OutputDataDir: dataDir,
		PeerURLs: urlStrings(cfg.AdvertisePeerUrls), InitialCluster: cfg.InitialCluster, InitialClusterToken: cfg.InitialClusterToken,
		RevisionBump: restoreRevisionBump, MarkCompacted: true,
	})
}

func urlStrings(us []url.URL) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.String()
	}
	return out
}
