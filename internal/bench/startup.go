package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultServerCommand starts this binary's server on a fresh data dir,
// with its node agent when run as root (the agent needs root).
func DefaultServerCommand() []string {
	self, err := os.Executable()
	if err != nil {
		self = "plainkube"
	}
	cmd := []string{self, "server", "--data-dir", "{dataDir}", "--port", "{port}", "--bind-address", "127.0.0.1", "--log-level", "error"}
	if os.Geteuid() != 0 {
		cmd = append(cmd, "--disable-node")
	}
	return cmd
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
	var readyz, nodeReady, rss, cpu []float64
	for i := 0; i < repeat; i++ {
		o.progress("startup: run %d/%d", i+1, repeat)
		rz, nr, mem, idle, err := startOnce(ctx, command)
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
// to the first Ready node (0 if none within 10 s), its RSS after 3 s, and
// the CPU it then uses while idle over 5 s.
func startOnce(ctx context.Context, template []string) (readyzMS, nodeMS, rssMiB, idleCPU float64, err error) {
	dataDir, err := os.MkdirTemp("", "plainkube-bench-startup")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	defer os.RemoveAll(dataDir)
	port, err := freePort()
	if err != nil {
		return 0, 0, 0, 0, err
	}
	args := make([]string, len(template))
	for i, a := range template {
		a = strings.ReplaceAll(a, "{dataDir}", dataDir)
		args[i] = strings.ReplaceAll(a, "{port}", strconv.Itoa(port))
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("starting %v: %w", args, err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(start) > time.Minute {
			return 0, 0, 0, 0, fmt.Errorf("%s not ready within a minute", url)
		}
		time.Sleep(2 * time.Millisecond)
	}
	readyzMS = ms(time.Since(start))
	if d, ok := firstNodeReady(ctx, filepath.Join(dataDir, "admin.kubeconfig"), start, 10*time.Second); ok {
		nodeMS = ms(d)
	}
	time.Sleep(3 * time.Second)
	rssMiB = float64(treeRSS(cmd.Process.Pid)) / (1 << 20)
	before, t0 := treeCPU(cmd.Process.Pid), time.Now()
	time.Sleep(5 * time.Second)
	idleCPU = 100 * (treeCPU(cmd.Process.Pid) - before).Seconds() / time.Since(t0).Seconds()
	return readyzMS, nodeMS, rssMiB, idleCPU, nil
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
			for _, n := range nodes.Items {
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
						return time.Since(start), true
					}
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, false
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
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
