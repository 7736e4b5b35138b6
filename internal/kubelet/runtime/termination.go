package runtime

import (
	"bytes"
	"io"
	"os"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/kubelet/logs"
)

// Upstream's limits on termination messages: what is read of the file,
// and, for FallbackToLogsOnError, of the log's tail.
const (
	maxTerminationMessage  = 4096
	fallbackLogLines       = 80
	fallbackLogBytes       = 2048
	defaultTerminationPath = "/dev/termination-log"
)

// Annotations on containers, upstream's names: what the agent needs to
// read a container's termination message back.
const (
	annotationTerminationPath   = "io.kubernetes.container.terminationMessagePath"
	annotationTerminationPolicy = "io.kubernetes.container.terminationMessagePolicy"
)

// termMessages caches the termination messages of exited containers (they
// do not change), by pod and container ID.
type termMessages struct {
	mu sync.Mutex
	m  map[types.UID]map[string]string
}

func (t *termMessages) get(uid types.UID, id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[uid][id]
	return s, ok
}

func (t *termMessages) put(uid types.UID, id, msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[types.UID]map[string]string{}
	}
	if t.m[uid] == nil {
		t.m[uid] = map[string]string{}
	}
	t.m[uid][id] = msg
}

func (t *termMessages) forget(live map[types.UID]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uid := range t.m {
		if !live[uid] {
			delete(t.m, uid)
		}
	}
}

// terminationMessage is what an exited container left as its message, as
// upstream reads it: the end of the file at its terminationMessagePath (4
// KiB at most) or, with FallbackToLogsOnError when that is empty and the
// container failed (but did run), the tail of its log (80 lines, the last
// 2 KiB of them).
func terminationMessage(st *runtimeapi.ContainerStatus) string {
	path := st.GetAnnotations()[annotationTerminationPath]
	policy := corev1.TerminationMessagePolicy(st.GetAnnotations()[annotationTerminationPolicy])
	var msg string
	for _, m := range st.GetMounts() {
		if path != "" && m.ContainerPath == path {
			msg = readTail(m.HostPath, maxTerminationMessage)
			break
		}
	}
	if msg == "" && policy == corev1.TerminationMessageFallbackToLogsOnError && st.ExitCode != 0 &&
		st.Reason != "ContainerCannotRun" && st.LogPath != "" {
		msg = logTail(st.LogPath, fallbackLogLines, fallbackLogBytes)
	}
	return msg
}

// readTail is the last n bytes of the file at path.
func readTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// logTail is the messages of the last lines lines of a CRI log file, at
// most the last limit bytes of them.
func logTail(path string, lines int, limit int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var msgs [][]byte
	var cur []byte
	for _, raw := range bytes.Split(b, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		l, err := logs.ParseLine(raw)
		if err != nil {
			continue
		}
		// A partial record continues in the next one.
		cur = append(cur, l.Message...)
		if !l.Partial {
			msgs, cur = append(msgs, append(cur, '\n')), nil
		}
	}
	if len(cur) > 0 { // the output ended without a newline
		msgs = append(msgs, cur)
	}
	if len(msgs) > lines {
		msgs = msgs[len(msgs)-lines:]
	}
	out := bytes.Join(msgs, nil)
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return string(out)
}
