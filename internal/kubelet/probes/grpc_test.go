package probes

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	ctx := context.Background()
	addr := ln.Addr().String()
	if err := grpcProbe(ctx, addr, "", time.Second); err != nil {
		t.Errorf("serving: %v", err)
	}
	if err := grpcProbe(ctx, addr, "db", time.Second); err == nil || err.Error() != `service unhealthy (responded with "NOT_SERVING")` {
		t.Errorf("not serving: %v", err)
	}
	// Nothing listening: a failure, within the timeout.
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln2.Addr().String()
	ln2.Close()
	start := time.Now()
	if err := grpcProbe(ctx, closed, "", 500*time.Millisecond); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("closed port: %v after %s", err, time.Since(start))
	} else if !strings.Contains(err.Error(), "health rpc") && !strings.Contains(err.Error(), "timeout") {
		t.Logf("closed port: %v", err)
	}
}
