package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Metric is one measured figure.
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Result is one workload's figures.
type Result struct {
	Workload string   `json:"workload"`
	Metrics  []Metric `json:"metrics"`
	// Error says why the workload could not finish (its figures so far stay).
	Error string `json:"error,omitempty"`
	// Notes say what went wrong without stopping the workload (the first
	// of its failed requests, say).
	Notes []string `json:"notes,omitempty"`
}

func (r *Result) add(name string, value float64, unit string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: value, Unit: unit})
}

// Report is the whole run: the machine, the server and every workload.
type Report struct {
	Time    time.Time `json:"time"`
	Machine struct {
		Cores       int    `json:"cores"`
		MemoryBytes uint64 `json:"memoryBytes"`
		OS          string `json:"os"`
	} `json:"machine"`
	Server struct {
		Host    string `json:"host"`
		Version string `json:"version"`
	} `json:"server"`
	Results []Result `json:"results"`
}

// Options configure a run.
type Options struct {
	// Config reaches the cluster under test (nil: only startup can run).
	Config *rest.Config
	// ServerCommand launches a server for the startup workload (default:
	// this binary's server). {dataDir} (a fresh directory), {port} (the
	// HTTPS port whose /readyz is polled), {etcdPort} and {etcdPeerPort}
	// (two more free ports) are filled in. A line with shell syntax runs
	// under /bin/sh -c. To time the first Ready node the server writes
	// {dataDir}/admin.kubeconfig.
	ServerCommand string
	// NodeWait bounds the wait for a first Ready node after /readyz
	// (default 10 s); servers without nodes cost this much per run.
	NodeWait time.Duration
	// ServerPIDs, when set, are the processes of the server under test
	// (each with its descendants): every workload then reports their
	// resident memory afterwards, and density the memory per stored pod.
	ServerPIDs  []int
	Repeat      int
	Concurrency []int
	// CRUDKinds are the kinds crud cycles through: configmaps, pods,
	// secrets (default configmaps and pods).
	CRUDKinds []string
	Duration  time.Duration
	ListPods  int
	Watchers  int
	Events    int
	Replicas  int
	PodImage  string
	Pods      int
	// Claims sizes pvc.
	Claims int
	// Agents sizes devcluster (default 2).
	Agents int
	// PodNetwork is podnet's backend, host-gw or vxlan (default: both).
	PodNetwork string
	// Services and Changes size netprog; DNSServer (ip:port) is the DNS
	// answerer the dns workload asks (default: the first real node's).
	Services  int
	Changes   int
	DNSServer string
	Progress  io.Writer

	// startedVersion is the version the startup workload's server reported.
	startedVersion string
}

// Workload is one named measurement.
type Workload struct {
	Name string
	Help string
	Run  func(ctx context.Context, o *Options, r *Result) error
}

// Workloads lists every workload in the order they run.
var Workloads = []Workload{
	{"startup", "launch a server, time to /readyz and to the first Ready node, RSS after settling", runStartup},
	{"crud", "create/get/update/list/delete of ConfigMaps and Pods at several concurrencies", runCRUD},
	{"webhook", "ConfigMap creates with and without a validating webhook on loopback: what a call adds, connections opened", runWebhook},
	{"list", "LIST of many pods: all namespaces, one namespace, label selector, paginated", runList},
	{"watch", "many watchers on one resource: latency from a write's response to each watcher", runWatch},
	{"churn", "creates/updates/deletes while an informer watches: errors and event lag", runChurn},
	{"density", "a deployment of many replicas on the cluster's nodes: time to all Running", runDensity},
	{"pvc", "claims of the default StorageClass, each with a pod mounting it: time to all Bound and Running", runPVC},
	{"pod-startup", "pods on real nodes (image present): creation to Running and Ready", runPodStartup},
	{"netprog", "Services of 10 endpoints on a real node's proxy: EndpointSlice change to rules in place", runNetprog},
	{"dns", "a node's DNS answerer: queries/s and latency for a cluster name from one client", runDNS},
	{"devcluster", "a server and --agents agents as network namespaces of this machine (root): time to every node Ready, and down", runDevCluster},
	{"podnet", "pod to pod on a dev cluster (root), same node and another node, per --pod-network backend: TCP round trip and throughput", runPodNet},
}

// makesItsCluster says whether the workload starts the cluster it
// measures (no --kubeconfig needed).
func makesItsCluster(name string) bool {
	return name == "startup" || name == "devcluster" || name == "podnet"
}

// Run runs the named workloads and returns the report.
func Run(ctx context.Context, names []string, o *Options) (*Report, error) {
	rep := &Report{Time: time.Now().UTC()}
	rep.Machine.Cores = runtime.NumCPU()
	rep.Machine.MemoryBytes = totalMemory()
	rep.Machine.OS = runtime.GOOS + "/" + runtime.GOARCH
	if o.Config != nil {
		rep.Server.Host = o.Config.Host
		if cs, err := kubernetes.NewForConfig(o.Config); err == nil {
			if v, err := cs.Discovery().ServerVersion(); err == nil {
				rep.Server.Version = v.GitVersion
			}
		}
	}
	for _, name := range names {
		w, ok := find(name)
		if !ok {
			return nil, fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(workloadNames(), ", "))
		}
		if !makesItsCluster(w.Name) && o.Config == nil {
			return nil, fmt.Errorf("workload %s needs --kubeconfig", name)
		}
		res := Result{Workload: w.Name}
		o.progress("%s: running", w.Name)
		cpuBefore := o.serverCPU()
		if err := w.Run(ctx, o, &res); err != nil {
			res.Error = err.Error()
		}
		if len(o.ServerPIDs) > 0 && w.Name != "startup" {
			res.add("server_rss_after", o.serverRSS(), "MiB")
			// CPU time, unlike latency, barely moves when other work
			// shares the machine.
			res.add("server_cpu", o.serverCPU()-cpuBefore, "s")
		}
		o.progress("%s: done", w.Name)
		rep.Results = append(rep.Results, res)
	}
	if rep.Server.Version == "" && o.startedVersion != "" {
		rep.Server.Version = o.startedVersion
		rep.Server.Host = "started by the server command"
	}
	return rep, nil
}

func find(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

func workloadNames() []string {
	var out []string
	for _, w := range Workloads {
		out = append(out, w.Name)
	}
	return out
}

func (o *Options) nodeWait() time.Duration {
	if o.NodeWait > 0 {
		return o.NodeWait
	}
	return 10 * time.Second
}

// serverRSS is the resident memory of ServerPIDs and their descendants, in MiB.
func (o *Options) serverRSS() float64 {
	var total uint64
	seen := map[int]bool{}
	for _, pid := range o.ServerPIDs {
		for _, p := range processTree(pid) {
			if !seen[p] {
				seen[p] = true
				total += rssOf(p)
			}
		}
	}
	return float64(total) / (1 << 20)
}

// serverCPU is the CPU time (user and system) ServerPIDs and their
// descendants have used, in seconds.
func (o *Options) serverCPU() float64 {
	var ticks uint64
	seen := map[int]bool{}
	for _, pid := range o.ServerPIDs {
		for _, p := range processTree(pid) {
			if !seen[p] {
				seen[p] = true
				ticks += cpuTicksOf(p)
			}
		}
	}
	return float64(ticks) / clockTicksPerSecond
}

func (o *Options) progress(format string, args ...interface{}) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "\r\033[K"+format, args...)
		if strings.HasSuffix(format, "done") {
			fmt.Fprintln(o.Progress)
		}
	}
}

// WriteTable prints the report for people.
func (rep *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "machine: %d cores, %.1f GiB, %s; server: %s %s\n", rep.Machine.Cores, float64(rep.Machine.MemoryBytes)/(1<<30), rep.Machine.OS, rep.Server.Version, rep.Server.Host)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tMETRIC\tVALUE\tUNIT")
	for _, r := range rep.Results {
		for _, m := range r.Metrics {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Workload, m.Name, formatValue(m.Value), m.Unit)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(tw, "%s\tnote\t%s\t\n", r.Workload, n)
		}
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\terror\t%s\t\n", r.Workload, r.Error)
		}
	}
	tw.Flush()
}

func formatValue(v float64) string {
	if v == float64(int64(v)) && v < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3f", v)
}

// WriteJSON writes the report as a JSON document.
func (rep *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// latencies collects durations and reports percentiles in milliseconds.
type latencies []time.Duration

func (l latencies) percentile(p float64) float64 {
	if len(l) == 0 {
		return 0
	}
	s := append(latencies(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return float64(s[i].Microseconds()) / 1000
}

func (l latencies) addTo(r *Result, prefix string) {
	r.add(prefix+"_p50", l.percentile(0.50), "ms")
	r.add(prefix+"_p90", l.percentile(0.90), "ms")
	r.add(prefix+"_p99", l.percentile(0.99), "ms")
}

func totalMemory() uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var kb uint64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			fmt.Sscanf(strings.TrimPrefix(line, "MemTotal:"), "%d", &kb)
		}
	}
	return kb * 1024
}
