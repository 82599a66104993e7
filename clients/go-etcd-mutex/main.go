// go-etcd-mutex: etcd's own Go lock, clientv3/concurrency.Mutex, as a Go program links it
// (Debian's golang-etcd-server-dev, etcd 3.4.23), speaking lockchaos's client protocol
// (docs/client-protocol.md) on stdin/stdout.
//
// One concurrency.Session per process (a lease kept alive by the client's keep-alive loop);
// a new one when the old one is done (its lease expired or was lost). acquire is
// NewMutex(session, "/lockchaos/<key>").Lock(ctx) with the acquire's timeout; release is
// Unlock. Token: the lock key's create revision, read back with a Get after Lock returns
// (null when that fails or the key is gone): Mutex keeps it unexported.
//
// In 3.4, Lock waits for the keys queued before its own to go (waitDeletes) and returns
// without asking whether its own key is still there: a waiter whose lease expired while it
// waited is granted a lock it does not hold. etcd 3.5.0 added that check
// (scenarios/go-etcd-mutex-expired-waiter.toml measures the difference).
//
// Build (scenarios/go-etcd-mutex-*.toml): Debian's Go in GOPATH mode, the etcd client from
// /usr/share/gocode; there is no module proxy to fetch from.
//
// Capabilities: session (lost = the session's Done channel is closed).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

type request struct {
	ID        uint64          `json:"id"`
	Type      string          `json:"type"`
	Key       string          `json:"key"`
	TimeoutMs int64           `json:"timeout_ms"`
	Client    string          `json:"client"`
	Config    json.RawMessage `json:"config"`
	Lock      struct {
		TTLMs uint64 `json:"ttl_ms"`
	} `json:"lock"`
	OpTimeoutMs int64 `json:"op_timeout_ms"`
}

type endpoint struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// failure: the request did not happen (fail) or may have (info).
type failure struct {
	kind string
	err  error
}

type lockClient struct {
	name      string
	endpoints []string
	ttlS      int
	opTimeout time.Duration
	cli       *clientv3.Client
	session   *concurrency.Session
	mutex     *concurrency.Mutex
}

func logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" go-etcd-mutex: "+format+"\n", args...)
}

// connect makes the client and a live session, lazily: init must not need the backend.
func (c *lockClient) connect(ctx context.Context) error {
	if c.cli == nil {
		cli, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints, DialTimeout: c.opTimeout})
		if err != nil {
			return err
		}
		c.cli = cli
	}
	if c.session != nil {
		select {
		case <-c.session.Done():
			logf("%s: session %x is done; starting a new one", c.name, c.session.Lease())
			c.session = nil
		default:
		}
	}
	if c.session == nil {
		s, err := concurrency.NewSession(c.cli, concurrency.WithTTL(c.ttlS), concurrency.WithContext(context.Background()))
		if err != nil {
			return err
		}
		c.session = s
	}
	return nil
}

func (c *lockClient) acquire(r request) (map[string]interface{}, *failure) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.TimeoutMs)*time.Millisecond)
	defer cancel()
	if err := c.connect(ctx); err != nil {
		return nil, &failure{"fail", fmt.Errorf("no session: %w", err)}
	}
	m := concurrency.NewMutex(c.session, "/lockchaos/"+r.Key)
	if err := m.Lock(ctx); err != nil {
		// Lock removes its own key when the wait fails; a Txn error may have left it queued.
		return nil, &failure{"info", err}
	}
	c.mutex = m
	var token interface{}
	getCtx, getCancel := context.WithTimeout(context.Background(), c.opTimeout/2)
	defer getCancel()
	if resp, err := c.cli.Get(getCtx, m.Key()); err != nil {
		logf("%s: granted %s; reading its create revision failed: %v", c.name, m.Key(), err)
	} else if len(resp.Kvs) == 0 {
		logf("%s: granted %s, but the key is gone (its lease expired while it waited)", c.name, m.Key())
	} else {
		token = resp.Kvs[0].CreateRevision
	}
	return map[string]interface{}{"type": "acquire_ok", "token": token}, nil
}

func (c *lockClient) release(r request) (map[string]interface{}, *failure) {
	if c.mutex == nil {
		return nil, &failure{"fail", fmt.Errorf("no lock held")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opTimeout/2)
	defer cancel()
	m := c.mutex
	c.mutex = nil
	if err := m.Unlock(ctx); err != nil {
		return nil, &failure{"info", err}
	}
	return map[string]interface{}{"type": "release_ok"}, nil
}

func (c *lockClient) sessionLost() map[string]interface{} {
	lost := false
	if c.session != nil {
		select {
		case <-c.session.Done():
			lost = true
		default:
		}
	}
	return map[string]interface{}{"type": "session_lost_ok", "lost": lost}
}

func initClient(r request) (*lockClient, error) {
	var config struct {
		Endpoints []endpoint `json:"endpoints"`
	}
	if err := json.Unmarshal(r.Config, &config); err != nil {
		return nil, err
	}
	c := &lockClient{name: r.Client, opTimeout: time.Duration(r.OpTimeoutMs) * time.Millisecond}
	for _, e := range config.Endpoints {
		c.endpoints = append(c.endpoints, fmt.Sprintf("%s:%d", e.Host, e.Port))
	}
	// The session's lease TTL is whole seconds: the scenario's TTL rounded up.
	c.ttlS = int((r.Lock.TTLMs + 999) / 1000)
	if c.ttlS < 1 {
		c.ttlS = 1
	}
	logf("%s -> %s, session TTL %d s", r.Client, strings.Join(c.endpoints, ","), c.ttlS)
	return c, nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<16), 1<<20)
	out := json.NewEncoder(os.Stdout)
	var client *lockClient
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			logf("skipped a line that is not a request: %v", err)
			continue
		}
		var answer map[string]interface{}
		var f *failure
		switch {
		case r.Type == "init":
			c, err := initClient(r)
			if err != nil {
				f = &failure{"fail", err}
				break
			}
			client = c
			answer = map[string]interface{}{"type": "init_ok", "capabilities": []string{"session"}}
		case client == nil:
			f = &failure{"fail", fmt.Errorf("%s before init", r.Type)}
		case r.Type == "acquire":
			answer, f = client.acquire(r)
		case r.Type == "release":
			answer, f = client.release(r)
		case r.Type == "session_lost":
			answer = client.sessionLost()
		default:
			f = &failure{"fail", fmt.Errorf("unknown request type %q", r.Type)}
		}
		if f != nil {
			logf("%s #%d: %s: %v", r.Type, r.ID, f.kind, f.err)
			answer = map[string]interface{}{"type": f.kind, "error": f.err.Error()}
		}
		answer["id"] = r.ID
		if err := out.Encode(answer); err != nil {
			logf("cannot write an answer: %v", err)
			os.Exit(1)
		}
	}
}
