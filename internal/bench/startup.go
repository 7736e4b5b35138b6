package bench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"plainkube.dev/plainkube/internal/api/nodeutil"
)

// settleTime is how long a started server settles before its RSS is read;
// idleWindow is how long its idle CPU is then measured. Tests shorten them.
var settleTime, idleWindow = 3 * time.Second, 5 * time.Second

// DefaultServerCommand starts this binary's server on a fresh data dir,
// with its node agent when run as root (the agent needs root).
func DefaultServerCommand() string {
	self, err := os.Executable()
	if err != nil {
		self = "plainkube"
	}
	line := shellQuote(self) + " server --data-dir {dataDir} --port {port} --bind-address 127.0.0.1 --log-level error"
	if os.Geteuid() != 0 {
		line += " --disable-node"
	}
	return line
}

// shellSyntax holds the characters that make a server command a shell line.
const shellSyntax = "|&;<>()$`\\\"'*?[#~\n"

// serverCommand turns a server command line into argv: {dataDir}, {port},
// {etcdPort} and {etcdPeerPort} are filled in; a plain command runs
// directly, and a line with shell syntax (several processes, redirections,
// quoting) runs under /bin/sh -c, so that one line can start an etcd and an
// API server.
func serverCommand(line, dataDir string, port, etcdPort, etcdPeerPort int) []string {
	r := strings.NewReplacer("{dataDir}", dataDir, "{port}", strconv.Itoa(port),
		"{etcdPort}", strconv.Itoa(etcdPort), "{etcdPeerPort}", strconv.Itoa(etcdPeerPort))
	line = r.Replace(line)
	if strings.ContainsAny(line, shellSyntax) {
		return []string{"/bin/sh", "-c", line}
	}
	return strings.Fields(line)
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, shellSyntax+" \t") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func runStartup(ctx context.Context, o *Options, r *Result) error {
	command := o.ServerCommand
	if len(command) == 0 {
		command = DefaultServerCommand()
	}
	repeat := o.Repeat
	if repeat <= 0 {
		repeat = 3
	}
	if strings.TrimSpace(command) == "" {
		return fmt.Errorf("empty server command")
	}
	var readyz, nodeReady, rss, cpu []float64
	for i := 0; i < repeat; i++ {
		o.progress("startup: run %d/%d", i+1, repeat)
		rz, nr, mem, idle, err := startOnce(ctx, o, command)
		if err != nil {
			return err
		}
		cpu = append(cpu, idle)
		readyz = append(readyz, rz)
		if nr > 0 {
			nodeReady = append(nodeReady, nr)
		}
		rss = append(rss, mem)
	}
	addSpread(r, "readyz", readyz, "ms")
	// A server that runs no node (an upstream control plane, or plainkube
	// with --disable-node and no --sim-nodes) has no first_node_ready figures;
	// this count says so under the same key for every server.
	r.add("runs_with_ready_node", float64(len(nodeReady)), "count")
	if len(nodeReady) > 0 {
		addSpread(r, "first_node_ready", nodeReady, "ms")
	}
	addSpread(r, "rss_after_settle", rss, "MiB")
	addSpread(r, "idle_cpu", cpu, "% of one core")
	return nil
}

func addSpread(r *Result, name string, v []float64, unit string) {
	sort.Float64s(v)
	r.add(name+"_min", v[0], unit)
	r.add(name+"_median", v[len(v)/2], unit)
	r.add(name+"_max", v[len(v)-1], unit)
}

// startOnce launches one server and returns the milliseconds to /readyz and
// to the first Ready node (0 if none within nodeWait), its RSS after 3 s,
// and the CPU it then uses while idle over 5 s (settleTime, idleWindow).
func startOnce(ctx context.Context, o *Options, line string) (readyzMS, nodeMS, rssMiB, idleCPU float64, err error) {
	nodeWait := o.nodeWait()
	dataDir, err := os.MkdirTemp("", "plainkube-bench-startup")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer os.RemoveAll(dataDir)
	ports, err := freePorts(3)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	args := serverCommand(line, dataDir, ports[0], ports[1], ports[2])
	if len(args) == 0 {
		return 0, 0, 0, 0, fmt.Errorf("empty server command")
	}
	logs := &tailWriter{}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.WaitDelay = 2 * time.Second // children that keep the output open do not hold Wait
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("starting %v: %w", args, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// Whatever the command left in its process group goes too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", ports[0])
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			return 0, 0, 0, 0, fmt.Errorf("server command %q exited before %s was ready; its output ends: %s", line, url, lastLines(logs.String(), 5))
		default:
		}
		if time.Since(start) > time.Minute {
			return 0, 0, 0, 0, fmt.Errorf("%s not ready within a minute", url)
		}
		time.Sleep(2 * time.Millisecond)
	}
	readyzMS = ms(time.Since(start))
	if o.startedVersion == "" {
		o.startedVersion = serverVersion(client, fmt.Sprintf("https://127.0.0.1:%d/version", ports[0]))
	}
	if d, ok := firstNodeReady(ctx, filepath.Join(dataDir, "admin.kubeconfig"), start, nodeWait); ok {
		nodeMS = ms(d)
	}
	time.Sleep(settleTime)
	rssMiB = float64(treeRSS(cmd.Process.Pid)) / (1 << 20)
	before, t0 := treeCPU(cmd.Process.Pid), time.Now()
	time.Sleep(idleWindow)
	idleCPU = 100 * (treeCPU(cmd.Process.Pid) - before).Seconds() / time.Since(t0).Seconds()
	return readyzMS, nodeMS, rssMiB, idleCPU, nil
}

// serverVersion reads gitVersion from a server's /version (which both
// plainkube and upstream serve to anonymous clients); "" if it cannot.
func serverVersion(client *http.Client, url string) string {
	resp, err := client.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return ""
	}
	return v.GitVersion
}

// firstNodeReady waits up to budget for the server's kubeconfig (the server
// writes it once it serves) and then for a Ready node.
func firstNodeReady(ctx context.Context, kubeconfig string, start time.Time, budget time.Duration) (time.Duration, bool) {
	deadline := time.Now().Add(budget)
	for !fileExists(kubeconfig) {
		if time.Now().After(deadline) {
			return 0, false
		}
		time.Sleep(5 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return 0, false
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, false
	}
	for time.Now().Before(deadline) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range nodes.Items {
				if nodeutil.IsReady(&nodes.Items[i]) {
					return time.Since(start), true
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, false
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tailWriter keeps about the last 4 KiB written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8<<10 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-4<<10:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// treeRSS sums the resident memory of pid and all its descendants.
func treeRSS(pid int) uint64 {
	var total uint64
	for _, p := range processTree(pid) {
		total += rssOf(p)
	}
	return total
}

// treeCPU sums the user and system CPU time of pid and its descendants.
func treeCPU(pid int) time.Duration {
	var ticks int64
	for _, p := range processTree(pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 12 {
				u, _ := strconv.ParseInt(f[11], 10, 64)
				k, _ := strconv.ParseInt(f[12], 10, 64)
				ticks += u + k
			}
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ is 100 on Linux
}

// processTree lists pid and all its descendants.
func processTree(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command (which may hold spaces) start after ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 1 {
				ppid, _ := strconv.Atoi(f[1])
				children[ppid] = append(children[ppid], p)
			}
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		out = append(out, p)
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	return out
}

func rssOf(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kb uint64
			fmt.Sscanf(strings.TrimPrefix(line, "VmRSS:"), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

// clockTicksPerSecond is Linux's USER_HZ, the unit of /proc/PID/stat's
// CPU times (100 on every architecture Go supports).
const clockTicksPerSecond = 100

// cpuTicksOf is the user and system CPU time pid has used, in clock ticks.
func cpuTicksOf(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	// After the command: state, ppid, ... utime is the 12th field, stime the 13th.
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	return utime + stime
}
