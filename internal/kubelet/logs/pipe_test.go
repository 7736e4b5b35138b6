package logs

import (
	"io"
	"strings"
	"testing"
	"time"
)

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

func readUntil(t *testing.T, r io.Reader, suffix string) string {
	t.Helper()
	var sb strings.Builder
	buf := make([]byte, 256)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.HasSuffix(sb.String(), suffix) {
		if time.Now().After(deadline) {
			t.Fatalf("read %q, waiting for %q", sb.String(), suffix)
		}
		n, err := r.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return sb.String()
}
