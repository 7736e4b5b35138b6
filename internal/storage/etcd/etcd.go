package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/internal/keyspace"
)

// Store is the etcd backend. Create it with New or Dial.
type Store struct {
	client     *clientv3.Client
	ownsClient bool
	// ctx ends every watch when the store is closed.
	ctx    context.Context
	cancel context.CancelFunc
}

var _ storage.Interface = (*Store)(nil)

// New returns a store over client. Close does not close the client.
func New(client *clientv3.Client) *Store {
	ctx, cancel := context.WithCancel(context.Background())
	return &Store{client: client, ctx: ctx, cancel: cancel}
}

// Dial connects to the etcd cluster at endpoints (TLS when tlsConfig is not
// nil) and returns a store that owns the connection.
func Dial(endpoints []string, tlsConfig *tls.Config) (*Store, error) {
	c, err := newClient(endpoints, tlsConfig)
	if err != nil {
		return nil, err
	}
	s := New(c)
	s.ownsClient = true
	return s, nil
}

func newClient(endpoints []string, tlsConfig *tls.Config) (*clientv3.Client, error) {
	lg, err := logutil.CreateDefaultZapLogger(zap.ErrorLevel)
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsConfig,
		DialTimeout: 10 * time.Second,
		Logger:      lg,
		// Values are whole objects; allow big ones (etcd's own limit is
		// the server's max-request-bytes).
		MaxCallSendMsgSize: 64 << 20,
		MaxCallRecvMsgSize: 1<<31 - 1,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect to %v: %w", endpoints, err)
	}
	return c, nil
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", key, convert(err))
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("create %s: %w", key, storage.ErrKeyExists)
	}
	return resp.Header.Revision, nil
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("get %s: %w", key, convert(err))
	}
	if len(resp.Kvs) == 0 {
		return storage.KeyValue{}, fmt.Errorf("get %s: %w", key, storage.ErrNotFound)
	}
	return keyValue(resp.Kvs[0]), nil
}

// Update implements storage.Interface.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	if expectedRevision <= 0 {
		// No stored key has ModRevision 0, and comparing with 0 would match
		// a missing key: answer from a read instead.
		return 0, s.mismatch(ctx, "update", key, expectedRevision)
	}
	resp, err := s.client.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expectedRevision)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("update %s: %w", key, convert(err))
	}
	if !resp.Succeeded {
		return 0, mismatchErr("update", key, expectedRevision, resp.Responses[0].GetResponseRange().Kvs)
	}
	return resp.Header.Revision, nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	if expectedRevision < 0 {
		return storage.KeyValue{}, 0, s.mismatch(ctx, "delete", key, expectedRevision)
	}
	var cmps []clientv3.Cmp
	if expectedRevision != 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", expectedRevision))
	}
	resp, err := s.client.Txn(ctx).
		If(cmps...).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %s: %w", key, convert(err))
	}
	if !resp.Succeeded {
		return storage.KeyValue{}, 0, mismatchErr("delete", key, expectedRevision, resp.Responses[0].GetResponseRange().Kvs)
	}
	del := resp.Responses[0].GetResponseDeleteRange()
	if len(del.PrevKvs) == 0 {
		return storage.KeyValue{}, 0, fmt.Errorf("delete %s: %w", key, storage.ErrNotFound)
	}
	return keyValue(del.PrevKvs[0]), resp.Header.Revision, nil
}

// mismatch reads key to explain why a write at expectedRevision cannot apply.
func (s *Store) mismatch(ctx context.Context, op, key string, expectedRevision int64) error {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, key, convert(err))
	}
	return mismatchErr(op, key, expectedRevision, resp.Kvs)
}

func mismatchErr(op, key string, expectedRevision int64, kvs []*mvccpb.KeyValue) error {
	if len(kvs) == 0 {
		return fmt.Errorf("%s %s: %w", op, key, storage.ErrNotFound)
	}
	return fmt.Errorf("%s %s at revision %d (stored %d): %w", op, key, expectedRevision, kvs[0].ModRevision, storage.ErrConflict)
}

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	start, end := keyspace.Start(prefix), keyspace.End(prefix)
	if opts.StartKey > start {
		start = opts.StartKey
	}
	if start == "" {
		start = "\x00"
	}
	if end == "" {
		end = "\x00" // etcd's "to the end of the keyspace"
	}
	ops := []clientv3.OpOption{clientv3.WithRange(end)}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	resp, err := s.client.Get(ctx, start, ops...)
	if err != nil {
		return storage.ListResult{}, fmt.Errorf("list %s at revision %d: %w", prefix, opts.Revision, convert(err))
	}
	res := storage.ListResult{
		Items:    make([]storage.KeyValue, len(resp.Kvs)),
		Revision: resp.Header.Revision,
		More:     resp.More,
	}
	if opts.Revision > 0 {
		res.Revision = opts.Revision
	}
	for i, kv := range resp.Kvs {
		res.Items[i] = keyValue(kv)
	}
	if res.More {
		res.RemainingCount = resp.Count - int64(len(resp.Kvs))
	}
	return res, nil
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		return 0, fmt.Errorf("current revision: %w", convert(err))
	}
	return resp.Header.Revision, nil
}

// Compact implements storage.Interface.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if _, err := s.client.Compact(ctx, revision); err != nil {
		return fmt.Errorf("compact at %d: %w", revision, convert(err))
	}
	return nil
}

// Close ends the store's watches, and closes the client if Dial made it.
func (s *Store) Close() error {
	s.cancel()
	if s.ownsClient {
		return s.client.Close()
	}
	return nil
}

// Client returns the underlying etcd client.
func (s *Store) Client() *clientv3.Client { return s.client }

func keyValue(kv *mvccpb.KeyValue) storage.KeyValue {
	return storage.KeyValue{
		Key:            string(kv.Key),
		Value:          kv.Value,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
	}
}

// convert maps etcd's errors onto the storage sentinels.
func convert(err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted), errors.Is(err, rpctypes.ErrGRPCCompacted):
		return fmt.Errorf("%w (%v)", storage.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev), errors.Is(err, rpctypes.ErrGRPCFutureRev):
		return fmt.Errorf("%w (%v)", storage.ErrFutureRevision, err)
	}
	return err
}

// Endpoints are the member URLs the store's client was given.
func (s *Store) Endpoints() []string { return s.client.Endpoints() }

// Healthy reads a key through the cluster's consensus (a linearizable
// read, as upstream's etcd health checks do): nil once a quorum of
// members answers.
func (s *Store) Healthy(ctx context.Context) error {
	_, err := s.client.Get(ctx, "/registry/health")
	return err
}

// Probe checks that the member at endpoint answers (its status), as the
// API server's health checks of etcd do: nil, or what went wrong.
func (s *Store) Probe(ctx context.Context, endpoint string) error {
	_, err := s.client.Maintenance.Status(ctx, endpoint)
	return err
}
