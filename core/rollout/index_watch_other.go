//go:build !linux

package rollout

// watcher is not available off Linux: the index polls the directories.
type watcher struct{}

func newWatcher(*index) (*watcher, error) { return nil, errWatchUnsupported }

func (*watcher) drain() (lost bool, broken error) { return false, errWatchUnsupported }
func (*watcher) watching(string) bool             { return false }
func (*watcher) add(string) error                 { return errWatchUnsupported }
func (*watcher) forget(string)                    {}
func (*watcher) close()                           {}
