package etcd

import (
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// Embedded is a single-node etcd running inside this process.
type Embedded struct {
	etcd     *embed.Etcd
	client   *clientv3.Client
	endpoint string
	closing  *atomic.Bool
}

// EmbeddedOption changes how StartEmbedded configures etcd.
type EmbeddedOption func(*embed.Config)

// WithoutFsync makes etcd skip fsync: much faster, but a crash can lose or
// corrupt data. For tests and simulations only.
func WithoutFsync() EmbeddedOption {
	return func(c *embed.Config) { c.UnsafeNoFsync = true }
}

// WithClientURL makes etcd listen for clients on u (for example
// "http://127.0.0.1:2379" or "unix:///run/plainkube/etcd.sock") instead of a
// free loopback port.
func WithClientURL(u url.URL) EmbeddedOption {
	return func(c *embed.Config) {
		c.ListenClientUrls = []url.URL{u}
		c.AdvertiseClientUrls = []url.URL{u}
	}
}

// WithConfig applies f to etcd's configuration, after plainkube's defaults.
func WithConfig(f func(*embed.Config)) EmbeddedOption { return f }

// startTimeout bounds how long StartEmbedded waits for etcd to serve.
const startTimeout = 30 * time.Second

// StartEmbedded starts a single-node etcd keeping its data in dataDir and
// returns once it serves. By default it listens for clients on a free
// 127.0.0.1 port and for peers on another (never used by a single node), so
// parallel instances never collide; logs below error level are dropped.
func StartEmbedded(dataDir string, opts ...EmbeddedOption) (*Embedded, error) {
	cfg := embeddedConfig(dataDir)
	closing := new(atomic.Bool)
	lg, err := quietLogger(closing)
	if err != nil {
		return nil, err
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	for _, o := range opts {
		o(cfg)
	}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: start embedded in %s: %w", dataDir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd: embedded failed to start: %w", err)
	case <-time.After(startTimeout):
		e.Close()
		return nil, errors.New("etcd: embedded did not become ready in time")
	}
	endpoint := clientEndpoint(cfg.ListenClientUrls[0], e)
	client, err := newClient([]string{endpoint}, nil)
	if err != nil {
		e.Close()
		return nil, err
	}
	return &Embedded{etcd: e, client: client, endpoint: endpoint, closing: closing}, nil
}

// embeddedConfig is the configuration of the single member StartEmbedded
// runs (and RestoreSnapshot restores), before its options.
func embeddedConfig(dataDir string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = "plainkube"
	cfg.Dir = dataDir
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"}
	// Port 0: the kernel picks a free port when etcd binds, so there is no
	// window in which another process can take it.
	loopback := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{loopback}
	cfg.AdvertiseClientUrls = []url.URL{loopback}
	cfg.ListenPeerUrls = []url.URL{loopback}
	cfg.AdvertisePeerUrls = []url.URL{loopback}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.InitialClusterToken = "plainkube"
	// A single node elects itself after one tick: keep ticks short so that
	// happens in milliseconds.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	cfg.InitialElectionTickAdvance = true
	return cfg
}

// clientEndpoint is the address to dial for the client listener u.
func clientEndpoint(u url.URL, e *embed.Etcd) string {
	if u.Scheme == "unix" || u.Scheme == "unixs" {
		return u.String()
	}
	return u.Scheme + "://" + e.Clients[0].Addr().String()
}

// Client returns a client connected to the embedded etcd; Close closes it.
func (e *Embedded) Client() *clientv3.Client { return e.client }

// Endpoint returns the client URL the embedded etcd serves on.
func (e *Embedded) Endpoint() string { return e.endpoint }

// Store returns a storage.Interface over the embedded etcd.
func (e *Embedded) Store() *Store { return New(e.client) }

// Close closes the client and stops etcd, waiting until it has.
func (e *Embedded) Close() error {
	err := e.client.Close()
	e.closing.Store(true)
	e.etcd.Close()
	<-e.etcd.Server.StopNotify()
	return err
}
