package inprocess

import "sync"

// eventQueue delivers events in order through a channel, holding them
// without bound until they are read, so that the connection's reader
// never waits for the consumer.
type eventQueue struct {
	out  chan Event
	wake chan struct{}
	stop chan struct{}

	// mu guards the fields that follow.
	mu       sync.Mutex
	items    []Event
	closed   bool
	stopOnce sync.Once
}

func newEventQueue() *eventQueue {
	q := &eventQueue{out: make(chan Event), wake: make(chan struct{}, 1), stop: make(chan struct{})}
	go q.pump()
	return q
}

// push queues an event.
func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	q.items = append(q.items, e)
	q.mu.Unlock()
	q.signal()
}

// close says no more events come; the queued ones are still delivered.
func (q *eventQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// abandon drops what is queued and closes the channel.
func (q *eventQueue) abandon() { q.stopOnce.Do(func() { close(q.stop) }) }

func (q *eventQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *eventQueue) pump() {
	defer close(q.out)
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			closed := q.closed
			q.mu.Unlock()
			if closed {
				return
			}
			select {
			case <-q.wake:
			case <-q.stop:
				return
			}
			continue
		}
		e := q.items[0]
		q.items[0] = Event{}
		q.items = q.items[1:]
		q.mu.Unlock()
		select {
		case q.out <- e:
		case <-q.stop:
			return
		}
	}
}
