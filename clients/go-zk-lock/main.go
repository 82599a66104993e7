// go-zk-lock: go-zookeeper's zk.Lock (Debian's golang-github-samuel-go-zookeeper-dev, the
// 2018 snapshot c4fab1a), ZooKeeper's lock recipe as a Go program links it, speaking
// lockchaos's client protocol (docs/client-protocol.md) on stdin/stdout.
//
// One zk.Conn per process (session timeout = lock.ttl_ms), a zk.NewLock per acquire on
// "/lockchaos/<key>": Lock() creates a protected ephemeral sequential node and waits on the
// one ahead; Unlock() deletes it. Lock() takes no deadline: an acquire that times out is
// answered `fail` and its Lock() left to finish in the background, which then unlocks at once
// (as an application giving up on it would).
// Token: our node's creation zxid (czxid), found among the lock path's children by its
// ephemeral owner, our session (null when that fails): zk.Lock keeps its path unexported.
//
// Build (scenarios/go-zk-lock-*.toml): Debian's Go in GOPATH mode.
// Capabilities: session (lost = the connection's events said StateExpired since the grant).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/samuel/go-zookeeper/zk"
)

type request struct {
	ID        uint64 `json:"id"`
	Type      string `json:"type"`
	Key       string `json:"key"`
	TimeoutMs int64  `json:"timeout_ms"`
	Client    string `json:"client"`
	Config    struct {
		Connect string `json:"connect"`
	} `json:"config"`
	Lock struct {
		TTLMs int64 `json:"ttl_ms"`
	} `json:"lock"`
}

type failure struct {
	kind string
	err  error
}

type lockClient struct {
	name    string
	servers []string
	session time.Duration
	conn    *zk.Conn
	held    *zk.Lock
	path    string
	lost    atomic.Bool
}

func logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "%s go-zk-lock: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (c *lockClient) connect() error {
	if c.conn != nil {
		return nil
	}
	conn, events, err := zk.Connect(c.servers, c.session)
	if err != nil {
		return err
	}
	go func() {
		for e := range events {
			if e.State == zk.StateExpired {
				logf("%s: session expired", c.name)
				c.lost.Store(true)
			}
		}
	}()
	c.conn = conn
	return nil
}

// token is the czxid of our node under path: the child whose ephemeral owner is our session.
func (c *lockClient) token(path string) interface{} {
	children, _, err := c.conn.Children(path)
	if err != nil {
		logf("%s: granted; listing %s failed: %v", c.name, path, err)
		return nil
	}
	for _, child := range children {
		_, stat, err := c.conn.Get(path + "/" + child)
		if err == nil && stat.EphemeralOwner == c.conn.SessionID() {
			return stat.Czxid
		}
	}
	logf("%s: granted, but no node under %s is our session's", c.name, path)
	return nil
}

func (c *lockClient) acquire(r request) (map[string]interface{}, *failure) {
	if err := c.connect(); err != nil {
		return nil, &failure{"fail", fmt.Errorf("connect: %w", err)}
	}
	path := "/lockchaos/" + r.Key
	l := zk.NewLock(c.conn, path, zk.WorldACL(zk.PermAll))
	c.lost.Store(false)
	done := make(chan error, 1)
	go func() { done <- l.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, &failure{"info", fmt.Errorf("Lock: %w", err)}
		}
	case <-time.After(time.Duration(r.TimeoutMs) * time.Millisecond):
		go func() {
			if <-done == nil {
				logf("%s: a Lock() given up on returned later; unlocking it", c.name)
				_ = l.Unlock()
			}
		}()
		return nil, &failure{"fail", fmt.Errorf("not granted within %d ms", r.TimeoutMs)}
	}
	c.held, c.path = l, path
	return map[string]interface{}{"type": "acquire_ok", "token": c.token(path)}, nil
}

func (c *lockClient) release() (map[string]interface{}, *failure) {
	l := c.held
	c.held = nil
	if l == nil {
		return nil, &failure{"fail", fmt.Errorf("this client does not hold the lock")}
	}
	if err := l.Unlock(); err != nil {
		return nil, &failure{"info", fmt.Errorf("Unlock: %w", err)}
	}
	return map[string]interface{}{"type": "release_ok"}, nil
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
			ttl := r.Lock.TTLMs
			if ttl <= 0 {
				ttl = 2000
			}
			client = &lockClient{name: r.Client, servers: strings.Split(r.Config.Connect, ","), session: time.Duration(ttl) * time.Millisecond}
			logf("%s -> %s, session timeout %v", r.Client, r.Config.Connect, client.session)
			answer = map[string]interface{}{"type": "init_ok", "capabilities": []string{"session"}}
		case client == nil:
			f = &failure{"fail", fmt.Errorf("%s before init", r.Type)}
		case r.Type == "acquire":
			answer, f = client.acquire(r)
		case r.Type == "release":
			answer, f = client.release()
		case r.Type == "session_lost":
			answer = map[string]interface{}{"type": "session_lost_ok", "lost": client.lost.Load()}
		default:
			f = &failure{"fail", fmt.Errorf("unknown request type %q", r.Type)}
		}
		if f != nil {
			logf("%s #%d: %s: %v", r.Type, r.ID, f.kind, f.err)
			answer = map[string]interface{}{"type": f.kind, "error": f.err.Error()}
		}
		answer["id"] = r.ID
		if err := out.Encode(answer); err != nil {
			os.Exit(1)
		}
	}
}
