package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/api/metricsapi"
	"plainkube.dev/plainkube/internal/api/nodeutil"
	"plainkube.dev/plainkube/internal/api/stats"
	"plainkube.dev/plainkube/internal/registry"
)

var apiVersion = GroupVersion.String()

// usage is CPU in nanocores and memory in bytes as metrics-server shows
// them; false when the summary lacks either.
func usage(cpu *stats.CPUStats, mem *stats.MemoryStats) (corev1.ResourceList, bool) {
	if cpu == nil || cpu.UsageNanoCores == nil || mem == nil || mem.WorkingSetBytes == nil {
		return nil, false
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewScaledQuantity(int64(*cpu.UsageNanoCores), resource.Nano),
		corev1.ResourceMemory: *resource.NewQuantity(int64(*mem.WorkingSetBytes), resource.BinarySI),
	}, true
}

// nodeMetricsOf is node's metrics from its summary.
func nodeMetricsOf(node *corev1.Node, s *stats.Summary, now time.Time) (metricsapi.NodeMetrics, bool) {
	u, ok := usage(s.Node.CPU, s.Node.Memory)
	if !ok {
		return metricsapi.NodeMetrics{}, false
	}
	return nodeMetric(node, s.Node.CPU.Time, u, now), true
}

// nodeMetric is node's NodeMetrics of usage u sampled at stamp, served at
// now.
func nodeMetric(node *corev1.Node, stamp metav1.Time, u corev1.ResourceList, now time.Time) metricsapi.NodeMetrics {
	return metricsapi.NodeMetrics{
		TypeMeta:   metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: apiVersion},
		ObjectMeta: metav1.ObjectMeta{Name: node.Name, Labels: node.Labels, CreationTimestamp: metav1.NewTime(now)},
		Timestamp:  stamp, Window: metav1.Duration{Duration: stats.Interval}, Usage: u,
	}
}

// podMetric is pod's PodMetrics of containers sampled at stamp, served
// at now.
func podMetric(pod *corev1.Pod, stamp metav1.Time, containers []metricsapi.ContainerMetrics, now time.Time) metricsapi.PodMetrics {
	return metricsapi.PodMetrics{
		TypeMeta:   metav1.TypeMeta{Kind: "PodMetrics", APIVersion: apiVersion},
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels, CreationTimestamp: metav1.NewTime(now)},
		Timestamp:  stamp, Window: metav1.Duration{Duration: stats.Interval}, Containers: containers,
	}
}

// podMetricsOf is pod's metrics from its node's summary: every running
// container's usage (false if the summary has none of them).
func podMetricsOf(pod *corev1.Pod, s *stats.Summary, now time.Time) (metricsapi.PodMetrics, bool) {
	for _, ps := range s.Pods {
		// A mirror pod stands for the static pod whose UID is its hash.
		uid := string(pod.UID)
		if h, ok := pod.Annotations["kubernetes.io/config.mirror"]; ok {
			uid = h
		}
		if ps.PodRef.Namespace != pod.Namespace || ps.PodRef.Name != pod.Name || ps.PodRef.UID != uid || len(ps.Containers) == 0 {
			continue
		}
		pm := podMetric(pod, metav1.Time{}, []metricsapi.ContainerMetrics{}, now)
		for _, c := range ps.Containers {
			u, ok := usage(c.CPU, c.Memory)
			if !ok {
				return metricsapi.PodMetrics{}, false // as metrics-server: all containers or nothing
			}
			if c.CPU.Time.After(pm.Timestamp.Time) {
				pm.Timestamp = c.CPU.Time
			}
			pm.Containers = append(pm.Containers, metricsapi.ContainerMetrics{Name: c.Name, Usage: u})
		}
		sort.Slice(pm.Containers, func(i, j int) bool { return pm.Containers[i].Name < pm.Containers[j].Name })
		return pm, true
	}
	return metricsapi.PodMetrics{}, false
}

// simulatedStamp is the time of a simulated sample: the serving time, to
// the second, as a scrape's.
func simulatedStamp(now time.Time) metav1.Time { return metav1.NewTime(now.Truncate(time.Second)) }

// simulatedPodMetrics is the usage a pod on a simulated node declares in
// its annotations (metricsapi.SimulatedUsage); false while none of its
// containers runs.
func simulatedPodMetrics(pod *corev1.Pod, now time.Time) (metricsapi.PodMetrics, bool, error) {
	containers, ok, err := metricsapi.SimulatedUsage(pod)
	if !ok || err != nil {
		return metricsapi.PodMetrics{}, false, err
	}
	return podMetric(pod, simulatedStamp(now), containers, now), true, nil
}

// simulatedNodeUsage is the usage of each simulated node among nodes: the
// sum of what its pods declare (pods whose annotations do not parse count
// nothing). The pods are listed once, only if there is such a node.
func simulatedNodeUsage(ctx context.Context, api registry.API, nodes []any) (map[string]corev1.ResourceList, error) {
	out := map[string]corev1.ResourceList{}
	for _, o := range nodes {
		if n := o.(*corev1.Node); nodeutil.IsSimulated(n) {
			out[n.Name] = corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(0, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(0, resource.BinarySI),
			}
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	pods, err := api.List(ctx, corev1.SchemeGroupVersion.WithResource("pods"), "", registry.ListOptions{Labels: labels.Everything(), Fields: fields.Everything()})
	if err != nil {
		return nil, err
	}
	for _, o := range pods {
		p := o.(*corev1.Pod)
		sum, ok := out[p.Spec.NodeName]
		if !ok {
			continue
		}
		containers, _, _ := metricsapi.SimulatedUsage(p)
		for _, c := range containers {
			for name, q := range c.Usage {
				total := sum[name]
				total.Add(q)
				sum[name] = total
			}
		}
	}
	return out, nil
}

// serve answers get and list of nodes and pods in metrics.k8s.io.
func serve(rq *registry.Request) error {
	r, info := rq.R, rq
	gr := rq.Resource.GroupResource()
	if info.Subresource != "" {
		return apierrors.NewNotFound(gr, info.Name)
	}
	if info.Verb != "get" && info.Verb != "list" {
		return apierrors.NewMethodNotSupported(gr, r.Method)
	}
	if info.Resource.Resource == "nodes" && info.Namespace != "" {
		return apierrors.NewNotFound(gr, info.Name)
	}
	sel := labels.Everything()
	if v := r.URL.Query().Get("labelSelector"); v != "" {
		var err error
		if sel, err = labels.Parse(v); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
	}
	fsel := fields.Everything()
	if v := r.URL.Query().Get("fieldSelector"); v != "" {
		var err error
		if fsel, err = fields.ParseSelector(v); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
	}
	ctx := r.Context()
	now := rq.API.Now()
	var out any
	switch info.Resource.Resource {
	case "nodes":
		nodes, err := objects(ctx, rq.API, "nodes", "", info.Name, sel, fsel)
		if err != nil {
			return err
		}
		sums := summaries(ctx, rq.API, nodes)
		simulated, err := simulatedNodeUsage(ctx, rq.API, nodes)
		if err != nil {
			return err
		}
		list := &metricsapi.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: apiVersion}, Items: []metricsapi.NodeMetrics{}}
		for _, o := range nodes {
			n := o.(*corev1.Node)
			if sum := sums[n.Name]; sum != nil {
				if m, ok := nodeMetricsOf(n, sum, now); ok {
					list.Items = append(list.Items, m)
				}
			} else if u, ok := simulated[n.Name]; ok {
				list.Items = append(list.Items, nodeMetric(n, simulatedStamp(now), u, now))
			}
		}
		out = list
		if info.Name != "" {
			if len(list.Items) == 0 {
				return apierrors.NewNotFound(gr, info.Name)
			}
			out = &list.Items[0]
		}
	case "pods":
		pods, err := objects(ctx, rq.API, "pods", info.Namespace, info.Name, sel, fsel)
		if err != nil {
			return err
		}
		names := map[string]bool{}
		for _, o := range pods {
			if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
				names[n] = true
			}
		}
		var nodes []any
		simulatedNodes := map[string]bool{}
		for n := range names {
			if node, err := rq.API.Get(ctx, corev1.SchemeGroupVersion.WithResource("nodes"), "", n); err == nil {
				nodes = append(nodes, node)
				simulatedNodes[n] = nodeutil.IsSimulated(node.(*corev1.Node))
			}
		}
		sums := summaries(ctx, rq.API, nodes)
		list := &metricsapi.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: apiVersion}, Items: []metricsapi.PodMetrics{}}
		for _, o := range pods {
			p := o.(*corev1.Pod)
			if sum := sums[p.Spec.NodeName]; sum != nil {
				if m, ok := podMetricsOf(p, sum, now); ok {
					list.Items = append(list.Items, m)
				}
			} else if simulatedNodes[p.Spec.NodeName] {
				m, ok, err := simulatedPodMetrics(p, now)
				if err != nil && info.Name != "" {
					return apierrors.NewInternalError(fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
				}
				// In a list, a pod whose annotations do not parse has no
				// metrics, as a pod whose agent fails.
				if ok {
					list.Items = append(list.Items, m)
				}
			}
		}
		out = list
		if info.Name != "" {
			if len(list.Items) == 0 {
				return apierrors.NewNotFound(gr, info.Namespace+"/"+info.Name) // as metrics-server names it
			}
			out = &list.Items[0]
		}
	}
	if rq.API.WantsTable() {
		out = table(out)
	}
	rq.W.Header().Set("Content-Type", "application/json")
	rq.W.WriteHeader(http.StatusOK)
	return json.NewEncoder(rq.W).Encode(out)
}

// objects lists the nodes or pods (of namespace ns; one, if name is
// set) that match the selectors.
func objects(ctx context.Context, api registry.API, resource, ns, name string, sel labels.Selector, fsel fields.Selector) ([]any, error) {
	gvr := corev1.SchemeGroupVersion.WithResource(resource)
	if name != "" {
		obj, err := api.Get(ctx, gvr, ns, name)
		if err != nil {
			return nil, err
		}
		return []any{obj}, nil
	}
	objs, err := api.List(ctx, gvr, ns, registry.ListOptions{Labels: sel, Fields: fsel})
	if err != nil {
		return nil, err
	}
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out, nil
}

// summaries fetches the usage summaries of the nodes whose agents can be
// reached, at once, by node name. Nodes that cannot (simulated nodes,
// nodes without an agent API, agents that fail) are left out.
func summaries(ctx context.Context, api registry.API, nodes []any) map[string]*stats.Summary {
	out := map[string]*stats.Summary{}
	client := api.KubeletClient()
	if client == nil {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, o := range nodes {
		n := o.(*corev1.Node)
		addr := nodeutil.AgentAddress(n)
		if nodeutil.IsSimulated(n) || addr == "" {
			continue
		}
		wg.Go(func() {
			sum, err := fetchSummary(ctx, client, addr)
			if err != nil {
				api.Logger().Debug("node usage summary", "node", n.Name, "err", err)
				return
			}
			mu.Lock()
			out[n.Name] = sum
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func fetchSummary(ctx context.Context, client *http.Client, addr string) (*stats.Summary, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/stats/summary", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: %s", resp.Status, msg)
	}
	var sum stats.Summary
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&sum); err != nil {
		return nil, err
	}
	return &sum, nil
}

// table is the Table of a metrics object or list, with
// metrics-server's columns.
func table(obj any) *metav1.Table {
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: "Name of the resource"},
			{Name: "cpu", Type: "string", Format: "quantity"},
			{Name: "memory", Type: "string", Format: "quantity"},
			{Name: "window", Type: "string", Format: "duration", Description: "Interval the usage is measured over"},
		}}
	row := func(meta metav1.ObjectMeta, cpu, mem resource.Quantity, window metav1.Duration) {
		raw, _ := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
		t.Rows = append(t.Rows, metav1.TableRow{Cells: []any{meta.Name, cpu.String(), mem.String(), window.Duration.String()}, Object: runtime.RawExtension{Raw: raw}})
	}
	addNode := func(m *metricsapi.NodeMetrics) {
		row(m.ObjectMeta, m.Usage[corev1.ResourceCPU], m.Usage[corev1.ResourceMemory], m.Window)
	}
	addPod := func(m *metricsapi.PodMetrics) {
		var cpu, mem resource.Quantity
		for _, c := range m.Containers {
			cpu.Add(c.Usage[corev1.ResourceCPU])
			mem.Add(c.Usage[corev1.ResourceMemory])
		}
		row(m.ObjectMeta, cpu, mem, m.Window)
	}
	switch o := obj.(type) {
	case *metricsapi.NodeMetricsList:
		for i := range o.Items {
			addNode(&o.Items[i])
		}
	case *metricsapi.NodeMetrics:
		addNode(o)
	case *metricsapi.PodMetricsList:
		for i := range o.Items {
			addPod(&o.Items[i])
		}
	case *metricsapi.PodMetrics:
		addPod(o)
	}
	if t.Rows == nil {
		t.Rows = []metav1.TableRow{}
	}
	return t
}
