package queue

import (
	"reflect"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Defaults, as upstream.
const (
	DefaultInitialBackoff           = time.Second
	DefaultMaxBackoff               = 10 * time.Second
	DefaultMaxUnschedulableDuration = 5 * time.Minute
)

// QueuedPodInfo is a pending pod and its history in the queue.
type QueuedPodInfo struct {
	*framework.PodInfo
	key string
	// Timestamp is when the pod was last added to the queue (or failed).
	Timestamp time.Time
	// Attempts counts scheduling attempts.
	Attempts int
	// InitialAttemptTimestamp is when the pod was first popped.
	InitialAttemptTimestamp time.Time
	// UnschedulablePlugins are the plugins that rejected the pod in its
	// last attempt; events registered by them move it back.
	UnschedulablePlugins sets.Set[string]
	// Gated is set while the pod has scheduling gates.
	Gated bool
}

// Pod is the pod.
func (q *QueuedPodInfo) Pod() *v1.Pod { return q.PodInfo.Pod }

// Options configure a Queue.
type Options struct {
	// Now is the clock (time.Now if nil).
	Now                      func() time.Time
	InitialBackoff           time.Duration
	MaxBackoff               time.Duration
	MaxUnschedulableDuration time.Duration
	// PluginEvents maps plugin names to the events after which pods they
	// rejected are retried (framework.Framework.EventsToRegister, merged
	// over profiles).
	PluginEvents map[string][]framework.ClusterEvent
}

// Queue is the scheduling queue. See the package documentation.
type Queue struct {
	mu   sync.Mutex
	opts Options

	active        *podHeap
	backoff       *podHeap
	unschedulable map[string]*QueuedPodInfo
	gated         map[string]*QueuedPodInfo
	// inFlight holds popped pods until Done or AddUnschedulable, with the
	// events seen meanwhile and the latest version of the pod.
	inFlight map[string]*inFlight

	nominator *nominator
	ready     chan struct{}
}

type inFlight struct {
	pod     *v1.Pod
	deleted bool
	updated bool
	events  []framework.ClusterEvent
}

// New returns an empty queue.
func New(opts Options) *Queue {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.InitialBackoff <= 0 {
		opts.InitialBackoff = DefaultInitialBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.MaxUnschedulableDuration <= 0 {
		opts.MaxUnschedulableDuration = DefaultMaxUnschedulableDuration
	}
	q := &Queue{
		opts:          opts,
		unschedulable: map[string]*QueuedPodInfo{},
		gated:         map[string]*QueuedPodInfo{},
		inFlight:      map[string]*inFlight{},
		nominator:     newNominator(),
		ready:         make(chan struct{}, 1),
	}
	q.active = newPodHeap(Less)
	q.backoff = newPodHeap(func(a, b *QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	return q
}

// Less orders active pods: higher spec.priority first, then older
// creationTimestamp, then earlier queue time, then name.
func Less(a, b *QueuedPodInfo) bool {
	pa, pb := framework.PodPriority(a.Pod()), framework.PodPriority(b.Pod())
	if pa != pb {
		return pa > pb
	}
	ca, cb := a.Pod().CreationTimestamp, b.Pod().CreationTimestamp
	if !ca.Equal(&cb) {
		return ca.Before(&cb)
	}
	if !a.Timestamp.Equal(b.Timestamp) {
		return a.Timestamp.Before(b.Timestamp)
	}
	return a.key < b.key
}

func key(pod *v1.Pod) string { return string(pod.UID) }

// Ready is signalled (it has capacity one) when a pod becomes active.
func (q *Queue) Ready() <-chan struct{} { return q.ready }

func (q *Queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *Queue) newInfo(pod *v1.Pod) *QueuedPodInfo {
	return &QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), key: key(pod), Timestamp: q.opts.Now(), UnschedulablePlugins: sets.New[string]()}
}

// Add adds a new pending pod.
func (q *Queue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := key(pod)
	if q.has(k) {
		q.updateLocked(pod)
		return
	}
	q.addNewLocked(q.newInfo(pod))
}

func (q *Queue) addNewLocked(p *QueuedPodInfo) {
	q.nominator.addFromStatus(p.PodInfo)
	if len(p.Pod().Spec.SchedulingGates) > 0 {
		p.Gated = true
		q.gated[p.key] = p
		return
	}
	p.Gated = false
	q.active.add(p)
	q.signal()
}

func (q *Queue) has(k string) bool {
	if _, ok := q.inFlight[k]; ok {
		return true
	}
	return q.active.get(k) != nil || q.backoff.get(k) != nil || q.unschedulable[k] != nil || q.gated[k] != nil
}

// Update replaces a pending pod with its new version. A pod whose spec or
// labels changed while unschedulable is worth trying again at once (after
// its backoff); a pod whose gates were removed becomes active.
func (q *Queue) Update(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.updateLocked(pod)
}

func (q *Queue) updateLocked(pod *v1.Pod) {
	k := key(pod)
	q.nominator.update(pod)
	if f, ok := q.inFlight[k]; ok {
		if meaningfulChange(f.pod, pod) {
			f.updated = true
		}
		f.pod = pod
		return
	}
	if p := q.gated[k]; p != nil {
		p.PodInfo = framework.NewPodInfo(pod)
		if len(pod.Spec.SchedulingGates) == 0 {
			delete(q.gated, k)
			p.Gated = false
			p.Timestamp = q.opts.Now()
			q.active.add(p)
			q.signal()
		}
		return
	}
	if p := q.active.get(k); p != nil {
		p.PodInfo = framework.NewPodInfo(pod)
		q.active.add(p)
		return
	}
	if p := q.backoff.get(k); p != nil {
		p.PodInfo = framework.NewPodInfo(pod)
		q.backoff.add(p)
		return
	}
	if p := q.unschedulable[k]; p != nil {
		changed := meaningfulChange(p.Pod(), pod)
		p.PodInfo = framework.NewPodInfo(pod)
		if changed {
			delete(q.unschedulable, k)
			q.requeueLocked(p)
		}
		return
	}
	q.addNewLocked(q.newInfo(pod))
}

// meaningfulChange reports a change that can change scheduling: anything
// but status and bookkeeping metadata.
func meaningfulChange(old, cur *v1.Pod) bool {
	strip := func(p *v1.Pod) *v1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion, c.Generation, c.ManagedFields = "", 0, nil
		c.Status = v1.PodStatus{}
		return c
	}
	return !reflect.DeepEqual(strip(old), strip(cur))
}

// Delete forgets a pod (deleted, or bound by someone).
func (q *Queue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := key(pod)
	q.nominator.delete(pod)
	if f, ok := q.inFlight[k]; ok {
		f.deleted = true
	}
	q.active.remove(k)
	q.backoff.remove(k)
	delete(q.unschedulable, k)
	delete(q.gated, k)
}

// Pop returns the next active pod, if any, and marks it in flight. Every
// pod popped must be handed back with Done or AddUnschedulable.
func (q *Queue) Pop() (*QueuedPodInfo, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.active.pop()
	if p == nil {
		return nil, false
	}
	p.Attempts++
	if p.InitialAttemptTimestamp.IsZero() {
		p.InitialAttemptTimestamp = q.opts.Now()
	}
	q.inFlight[p.key] = &inFlight{pod: p.Pod()}
	if q.active.Len() > 0 {
		q.signal()
	}
	return p, true
}

// Done ends a popped pod's attempt after it was scheduled (or is to be
// forgotten).
func (q *Queue) Done(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.inFlight, key(pod))
}

// AddUnschedulable hands back a popped pod that could not be scheduled.
// With no unschedulable plugins (an error, not a misfit) it backs off. A
// pod rejected by plugins waits in the unschedulable set, unless an event
// one of them cares about happened while it was being scheduled, or the
// pod itself changed; then it backs off and is retried.
func (q *Queue) AddUnschedulable(p *QueuedPodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f := q.inFlight[p.key]
	delete(q.inFlight, p.key)
	if f != nil && f.deleted {
		return
	}
	if q.active.get(p.key) != nil || q.backoff.get(p.key) != nil || q.unschedulable[p.key] != nil {
		return
	}
	if f != nil && f.pod != p.Pod() {
		p.PodInfo = framework.NewPodInfo(f.pod)
	}
	p.Timestamp = q.opts.Now()
	if len(p.UnschedulablePlugins) == 0 || (f != nil && f.updated) {
		q.backoff.add(p)
		return
	}
	if f != nil {
		for _, e := range f.events {
			if q.podMatchesEvent(p, e) {
				q.backoff.add(p)
				return
			}
		}
	}
	q.unschedulable[p.key] = p
}

// backoffDuration is InitialBackoff doubled per attempt after the first,
// up to MaxBackoff.
func (q *Queue) backoffDuration(p *QueuedPodInfo) time.Duration {
	d := q.opts.InitialBackoff
	for i := 1; i < p.Attempts; i++ {
		if d > q.opts.MaxBackoff-d {
			return q.opts.MaxBackoff
		}
		d += d
	}
	return min(d, q.opts.MaxBackoff)
}

func (q *Queue) backoffExpiry(p *QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.backoffDuration(p))
}

func (q *Queue) backingOff(p *QueuedPodInfo) bool {
	return q.backoffExpiry(p).After(q.opts.Now())
}

// requeueLocked puts a pod taken out of the unschedulable set into
// backoff, or active if its backoff is over.
func (q *Queue) requeueLocked(p *QueuedPodInfo) {
	if q.backingOff(p) {
		q.backoff.add(p)
		return
	}
	q.active.add(p)
	q.signal()
}

// Flush moves pods whose backoff is over to active, and pods unschedulable
// for longer than MaxUnschedulableDuration back to backoff or active.
func (q *Queue) Flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.opts.Now()
	for {
		p := q.backoff.peek()
		if p == nil || q.backoffExpiry(p).After(now) {
			break
		}
		q.backoff.pop()
		q.active.add(p)
		q.signal()
	}
	for k, p := range q.unschedulable {
		if now.Sub(p.Timestamp) > q.opts.MaxUnschedulableDuration {
			delete(q.unschedulable, k)
			q.requeueLocked(p)
		}
	}
}

// NextBackoffExpiry returns when the first backed-off pod is due (zero if
// none), so the driver may Flush then.
func (q *Queue) NextBackoffExpiry() time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p := q.backoff.peek(); p != nil {
		return q.backoffExpiry(p)
	}
	return time.Time{}
}

// podMatchesEvent reports whether e may help p: some plugin that rejected
// it registered e (a pod rejected by no plugin matches any event).
func (q *Queue) podMatchesEvent(p *QueuedPodInfo, e framework.ClusterEvent) bool {
	if e.Resource == framework.EventUnschedulableTimeout.Resource || len(p.UnschedulablePlugins) == 0 {
		return true
	}
	for name := range p.UnschedulablePlugins {
		for _, reg := range q.opts.PluginEvents[name] {
			if reg.Match(e) {
				return true
			}
		}
	}
	return false
}

// MoveOnEvent moves the unschedulable pods that e may help (and for which
// preCheck, if given, holds) to backoff or active, and remembers e for the
// pods in flight.
func (q *Queue) MoveOnEvent(e framework.ClusterEvent, preCheck func(*v1.Pod) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, f := range q.inFlight {
		f.events = append(f.events, e)
	}
	for k, p := range q.unschedulable {
		if !q.podMatchesEvent(p, e) || (preCheck != nil && !preCheck(p.Pod())) {
			continue
		}
		delete(q.unschedulable, k)
		q.requeueLocked(p)
	}
}

// Counts returns how many pods are active, backing off, unschedulable and
// gated.
func (q *Queue) Counts() (active, backoff, unschedulable, gated int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.active.Len(), q.backoff.Len(), len(q.unschedulable), len(q.gated)
}

// AddNominatedPod records that pod is nominated to node (by preemption,
// before the API has it). An empty node clears the nomination.
func (q *Queue) AddNominatedPod(pi *framework.PodInfo, node string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nominator.delete(pi.Pod)
	if node != "" {
		q.nominator.add(pi, node)
	}
}

// DeleteNominatedPod forgets a pod's nomination.
func (q *Queue) DeleteNominatedPod(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nominator.delete(pod)
}

// NominatedPods returns a copy of the nominations, by node, for a
// snapshot.
func (q *Queue) NominatedPods() map[string][]*framework.PodInfo {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make(map[string][]*framework.PodInfo, len(q.nominator.byNode))
	for n, ps := range q.nominator.byNode {
		out[n] = append([]*framework.PodInfo(nil), ps...)
	}
	return out
}

// nominator tracks nominated pods: node -> pods, pod -> node.
type nominator struct {
	byNode map[string][]*framework.PodInfo
	byPod  map[string]string
}

func newNominator() *nominator {
	return &nominator{byNode: map[string][]*framework.PodInfo{}, byPod: map[string]string{}}
}

func (n *nominator) addFromStatus(pi *framework.PodInfo) {
	if nn := pi.Pod.Status.NominatedNodeName; nn != "" {
		n.delete(pi.Pod)
		n.add(pi, nn)
	}
}

func (n *nominator) add(pi *framework.PodInfo, node string) {
	n.byPod[key(pi.Pod)] = node
	n.byNode[node] = append(n.byNode[node], pi)
}

func (n *nominator) delete(pod *v1.Pod) {
	k := key(pod)
	node, ok := n.byPod[k]
	if !ok {
		return
	}
	delete(n.byPod, k)
	ps := n.byNode[node]
	for i, pi := range ps {
		if key(pi.Pod) == k {
			ps = append(ps[:i:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(n.byNode, node)
	} else {
		n.byNode[node] = ps
	}
}

// update follows a pod's status.nominatedNodeName: a new or changed one
// replaces what the nominator had; one cleared in the API is kept only if
// the nominator set it itself and the API has not caught up — upstream
// keeps in-memory nominations until the pod is bound or deleted.
func (n *nominator) update(pod *v1.Pod) {
	k := key(pod)
	nn := pod.Status.NominatedNodeName
	cur, ok := n.byPod[k]
	if nn == "" {
		if ok {
			// Refresh the pod object in place.
			for i, pi := range n.byNode[cur] {
				if key(pi.Pod) == k {
					n.byNode[cur][i] = framework.NewPodInfo(pod)
				}
			}
		}
		return
	}
	if ok && cur == nn {
		for i, pi := range n.byNode[cur] {
			if key(pi.Pod) == k {
				n.byNode[cur][i] = framework.NewPodInfo(pod)
			}
		}
		return
	}
	n.delete(pod)
	n.add(framework.NewPodInfo(pod), nn)
}
