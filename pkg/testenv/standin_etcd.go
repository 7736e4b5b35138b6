package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"plainkube.dev/plainkube/internal/storage/etcd"
)

// RunEtcd is the etcd stand-in envtest starts before the API server. By
// default it holds the client port envtest chose and answers /health
// (marked as the stand-in, so that the kube-apiserver stand-in keeps
// objects in memory); with EnvEtcd=embedded it is plainkube's embedded
// etcd, serving there. Either way it runs until SIGTERM or SIGINT.
func RunEtcd(args []string, stdout, stderr io.Writer) error {
	var f etcdFlags
	if done, err := parseStandinFlags("etcd", etcdFlagSet(&f), args, stdout, stderr); done {
		return err
	}
	if len(f.listen) == 0 {
		return errors.New("etcd: no --listen-client-urls")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if os.Getenv(EnvEtcd) == "embedded" {
		return runEmbeddedEtcd(ctx, f.listen[0], f.dataDir, f.noFsync)
	}
	return holdEtcdPorts(ctx, f.listen)
}

// etcdFlags are the etcd flags the stand-in reads.
type etcdFlags struct {
	listen  []string
	dataDir string
	noFsync bool
}

// etcdFlagSet defines the etcd flags envtest passes; others are ignored.
func etcdFlagSet(f *etcdFlags) *pflag.FlagSet {
	fs := pflag.NewFlagSet("etcd", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.StringSliceVar(&f.listen, "listen-client-urls", []string{"http://localhost:2379"}, "client URLs to serve on (the first one with "+EnvEtcd+"=embedded)")
	fs.StringSlice("advertise-client-urls", nil, "accepted")
	fs.StringSlice("listen-peer-urls", nil, "accepted (a single member has no peers)")
	fs.StringVar(&f.dataDir, "data-dir", "", "data directory ("+EnvEtcd+"=embedded)")
	fs.BoolVar(&f.noFsync, "unsafe-no-fsync", false, "skip fsync ("+EnvEtcd+"=embedded)")
	fs.BoolP("help", "h", false, "print the flags")
	return fs
}

// runEmbeddedEtcd serves plainkube's embedded etcd on clientURL.
func runEmbeddedEtcd(ctx context.Context, clientURL, dataDir string, noFsync bool) error {
	u, err := url.Parse(clientURL)
	if err != nil {
		return fmt.Errorf("--listen-client-urls: %w", err)
	}
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "plainkube-envtest-etcd-"); err != nil {
			return err
		}
		defer os.RemoveAll(dataDir)
	}
	opts := []etcd.EmbeddedOption{etcd.WithClientURL(*u)}
	if noFsync {
		opts = append(opts, etcd.WithoutFsync())
	}
	e, err := etcd.StartEmbedded(dataDir, opts...)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return e.Close()
}

// holdEtcdPorts listens on each client URL and answers /health as etcd
// does, with the stand-in's mark; nothing else is served.
func holdEtcdPorts(ctx context.Context, urls []string) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(standinHeader, "memory")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"health":"true","reason":""}`)
	})
	srv := &http.Server{Handler: mux}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" {
			return fmt.Errorf("--listen-client-urls %q: the stand-in serves http:// URLs only", raw)
		}
		ln, err := net.Listen("tcp", u.Host)
		if err != nil {
			return fmt.Errorf("etcd: %w", err)
		}
		go srv.Serve(ln)
	}
	<-ctx.Done()
	return srv.Close()
}
