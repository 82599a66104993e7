// Apache Curator's InterProcessMutex (Curator 5.4.0, Debian's libcurator-recipes-java, on the
// ZooKeeper 3.8 client) as a Java service takes it, speaking lockchaos's client protocol
// (docs/client-protocol.md) on stdin/stdout; JSON by Gson (libgoogle-gson-java).
//
// One CuratorFramework per process (session timeout = lock.ttl_ms, retries on connection
// loss), one InterProcessMutex per lock path "/lockchaos/<key>": acquire(timeout_ms) queues an
// ephemeral sequential node and waits behind the one ahead; release() deletes it.
// Token: our lock node's creation zxid (czxid), read with checkExists() after acquire (null when
// that fails or the node is gone).
//
// Backend: zookeeper. Reads config.connect; lock.ttl_ms.
// Capabilities: session (lost = Curator's connection state listener saw LOST since the grant).

import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.LocalTime;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.data.Stat;

public class CuratorLock {
    /** The request did not happen (fail) or may have (info). */
    static class Outcome extends Exception {
        final String type;

        Outcome(String type, String message) {
            super(message);
            this.type = type;
        }
    }

    /** InterProcessMutex keeps its node's path protected: a subclass reads it. */
    static class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        String nodePath() {
            return getLockPath();
        }
    }

    String name;
    String connect;
    int sessionMs;
    int opMs;
    CuratorFramework client;
    Mutex held;
    final AtomicBoolean lost = new AtomicBoolean();

    static void log(String message) {
        System.err.println(LocalTime.now() + " java-curator-lock: " + message);
    }

    CuratorFramework client() {
        if (client == null) {
            client = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(sessionMs)
                    .connectionTimeoutMs(opMs)
                    .retryPolicy(new RetryNTimes(3, 100))
                    .build();
            client.getConnectionStateListenable().addListener((c, state) -> {
                log(name + ": connection " + state);
                if (state == ConnectionState.LOST) {
                    lost.set(true);
                }
            });
            client.start();
        }
        return client;
    }

    Map<String, Object> acquire(JsonObject req) throws Outcome {
        String key = req.get("key").getAsString();
        long timeoutMs = req.get("timeout_ms").getAsLong();
        Mutex mutex = new Mutex(client(), "/lockchaos/" + key);
        lost.set(false);
        boolean got;
        try {
            got = mutex.acquire(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new Outcome("info", "acquire: " + e);
        }
        if (!got) {
            throw new Outcome("fail", "not granted within " + timeoutMs + " ms");
        }
        held = mutex;
        Object token = null;
        try {
            Stat stat = client.checkExists().forPath(mutex.nodePath());
            if (stat == null) {
                log(name + ": granted " + mutex.nodePath() + ", but the node is gone");
            } else {
                token = stat.getCzxid();
            }
        } catch (Exception e) {
            log(name + ": granted; reading its node's czxid failed: " + e);
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("type", "acquire_ok");
        answer.put("token", token);
        return answer;
    }

    Map<String, Object> release() throws Outcome {
        Mutex mutex = held;
        held = null;
        if (mutex == null) {
            throw new Outcome("fail", "this client does not hold the lock");
        }
        try {
            mutex.release();
        } catch (Exception e) {
            throw new Outcome("info", "release: " + e);
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("type", "release_ok");
        return answer;
    }

    public static void main(String[] args) throws Exception {
        com.google.gson.Gson gson = new GsonBuilder().serializeNulls().create();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        CuratorLock lock = null;
        for (String line; (line = in.readLine()) != null; ) {
            JsonObject req;
            try {
                req = JsonParser.parseString(line).getAsJsonObject();
            } catch (RuntimeException e) {
                log("skipped a line that is not a request: " + e.getMessage());
                continue;
            }
            String type = req.get("type").getAsString();
            Map<String, Object> answer;
            try {
                if (type.equals("init")) {
                    lock = new CuratorLock();
                    lock.name = req.get("client").getAsString();
                    lock.connect = req.getAsJsonObject("config").get("connect").getAsString();
                    JsonObject params = req.getAsJsonObject("lock");
                    lock.sessionMs = params.has("ttl_ms") ? params.get("ttl_ms").getAsInt() : 2000;
                    lock.opMs = Math.max(500, req.get("op_timeout_ms").getAsInt() / 2);
                    log(lock.name + " -> " + lock.connect + ", session timeout " + lock.sessionMs + " ms");
                    answer = new LinkedHashMap<>();
                    answer.put("type", "init_ok");
                    answer.put("capabilities", new String[] {"session"});
                } else if (lock == null) {
                    throw new Outcome("fail", type + " before init");
                } else if (type.equals("acquire")) {
                    answer = lock.acquire(req);
                } else if (type.equals("release")) {
                    answer = lock.release();
                } else if (type.equals("session_lost")) {
                    answer = new LinkedHashMap<>();
                    answer.put("type", "session_lost_ok");
                    answer.put("lost", lock.lost.get());
                } else {
                    throw new Outcome("fail", "unknown request type " + type);
                }
            } catch (Outcome o) {
                log(type + " #" + req.get("id") + ": " + o.type + ": " + o.getMessage());
                answer = new LinkedHashMap<>();
                answer.put("type", o.type);
                answer.put("error", o.getMessage());
            }
            answer.put("id", req.get("id").getAsLong());
            out.println(gson.toJson(answer));
        }
    }
}
