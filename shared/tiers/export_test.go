package tiers

// SetDiskWriteHook makes every fill call fn just before it writes its disk
// file (outside the guard), so a test can land a purge there.
func SetDiskWriteHook(e *Engine, fn func(key string)) { e.diskWriteHook = fn }

// SetPurgeHook makes every purge call fn under its guard: held true as it
// takes effect, false as it ends.
func SetPurgeHook(e *Engine, fn func(held bool)) { e.purgeHook = fn }

// SetDetachHook makes every purge call fn after its guard, before it
// detaches its prefix from the disk tier.
func SetDetachHook(e *Engine, fn func()) { e.detachHook = fn }
