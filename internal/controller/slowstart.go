package controller

import "sync"

// SlowStart calls fn(0), fn(1), … fn(count-1) in batches of 1, 2, 4, …
// (the calls of one batch run in parallel), stopping after the first batch
// with an error. It returns how many calls succeeded, how many were never
// made, and one of the errors: a failing template or quota costs one
// failed call, not count. It is upstream's slowStartBatch.
func SlowStart(count int, fn func(i int) error) (succeeded, skipped int, err error) {
	next := 0
	for batch := min(count, 1); batch > 0; batch = min(2*batch, count-next) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for i := next; i < next+batch; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(i); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		next += batch
		succeeded += batch - len(errs)
		if len(errs) > 0 {
			return succeeded, count - next, <-errs
		}
	}
	return succeeded, 0, nil
}
