package volumebinding

import "testing"

func TestWakers(t *testing.T) {
	var w wakers
	a := w.add([]string{wakeClaimKey("ns", "a"), wakeVolumeKey("pv-a")})
	b := w.add([]string{wakeClaimKey("ns", "b")})
	woken := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	w.wake(wakeVolumeKey("pv-a"))
	w.wake(wakeVolumeKey("pv-a")) // told once, not twice
	if !woken(a) || woken(a) || woken(b) {
		t.Fatal("a change to pv-a must wake the wait on it once, and no other")
	}
	w.wake(wakeClaimKey("ns", "b"))
	if woken(a) || !woken(b) {
		t.Fatal("a change to claim b must wake only its wait")
	}
	w.remove([]string{wakeClaimKey("ns", "a"), wakeVolumeKey("pv-a")}, a)
	w.wake(wakeClaimKey("ns", "a"))
	if woken(a) {
		t.Fatal("a removed wait was woken")
	}
	w.remove([]string{wakeClaimKey("ns", "b")}, b)
	if len(w.byKey) != 0 {
		t.Fatalf("keys left after every wait went: %v", w.byKey)
	}
}
