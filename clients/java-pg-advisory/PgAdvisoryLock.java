// A Java program's Postgres session-level advisory lock through JDBC (PostgreSQL JDBC 42.5.5,
// Debian's libpostgresql-jdbc-java; JSON by Gson 2.10, libgoogle-gson-java), speaking
// lockchaos's client protocol (docs/client-protocol.md) on stdin/stdout. The same lock as
// clients/psycopg_session.py, as a JVM service takes it:
//
//   acquire: SELECT pg_try_advisory_lock(19523, k) every lock.retry_ms until true or the
//            request's timeout_ms; release: SELECT pg_advisory_unlock(19523, k), false -> fail.
//   k = FNV-1a 32 of the key's UTF-8 bytes as a signed int4 ("ledger" -> -293856116).
//
// The lock lasts as long as the session: no expiry, no fencing token (token null). One
// autocommit connection, made at the first request; a statement with no answer within
// OP_TIMEOUT_S (the driver's socketTimeout) is `info` and the connection is dropped, with its
// locks; a failed connect is `fail`. preferQueryMode=simple: no server-side prepared
// statements, so it runs unchanged behind PgBouncer.
//
// Backends: postgres-session, postgres-session-pooler. Reads config.hosts[0]; lock.retry_ms.
// Capabilities: none.

import com.google.gson.Gson;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.LocalTime;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

public class PgAdvisoryLock {
    static final int LOCK_TYPE = 19523;
    static final int OP_TIMEOUT_S = 2;

    /** The request did not happen (fail) or may have (info). */
    static class Outcome extends Exception {
        final String type;

        Outcome(String type, String message) {
            super(message);
            this.type = type;
        }
    }

    String url;
    long retryMs;
    Connection conn;
    final Set<String> held = new HashSet<>();

    static void log(String message) {
        System.err.println(LocalTime.now() + " java-pg-advisory: " + message);
    }

    static int fnv1a32(String name) {
        int h = 0x811C9DC5;
        for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xff)) * 0x01000193;
        }
        return h;
    }

    void drop() {
        if (conn != null) {
            try {
                conn.close();
            } catch (SQLException ignored) {
                // gone already
            }
        }
        conn = null;
        held.clear(); // the session's locks end with it
    }

    boolean selectBool(String sql) throws Outcome {
        try {
            if (conn == null || conn.isClosed()) {
                drop();
                conn = DriverManager.getConnection(url);
            }
        } catch (SQLException e) {
            drop();
            throw new Outcome("fail", "connect: " + e.getMessage());
        }
        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
            rs.next();
            return rs.getBoolean(1);
        } catch (SQLException e) {
            // 08xxx and no state: the connection broke, the statement may have run.
            String state = e.getSQLState();
            boolean broken = state == null || state.startsWith("08");
            drop();
            throw new Outcome(broken ? "info" : "fail", sql + ": " + state + " " + e.getMessage());
        }
    }

    Map<String, Object> acquire(JsonObject req) throws Outcome, InterruptedException {
        String key = req.get("key").getAsString();
        String sql = "SELECT pg_try_advisory_lock(" + LOCK_TYPE + ", " + fnv1a32(key) + ")";
        long deadline = System.nanoTime() + req.get("timeout_ms").getAsLong() * 1_000_000L;
        while (!selectBool(sql)) {
            if (System.nanoTime() + retryMs * 1_000_000L > deadline) {
                throw new Outcome("fail", "lock held by another session for " + req.get("timeout_ms") + " ms");
            }
            Thread.sleep(retryMs);
        }
        held.add(key);
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("type", "acquire_ok");
        answer.put("token", null);
        return answer;
    }

    Map<String, Object> release(JsonObject req) throws Outcome {
        String key = req.get("key").getAsString();
        if (!held.remove(key) || conn == null) {
            throw new Outcome("fail", "this session does not hold the lock (not taken, or the connection that held it is gone)");
        }
        if (!selectBool("SELECT pg_advisory_unlock(" + LOCK_TYPE + ", " + fnv1a32(key) + ")")) {
            throw new Outcome("fail", "pg_advisory_unlock: false, this session did not hold the lock");
        }
        Map<String, Object> answer = new LinkedHashMap<>();
        answer.put("type", "release_ok");
        return answer;
    }

    public static void main(String[] args) throws Exception {
        // serializeNulls: the token is there, and null.
        Gson gson = new com.google.gson.GsonBuilder().serializeNulls().create();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        PgAdvisoryLock client = null;
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
                    client = new PgAdvisoryLock();
                    JsonObject host = req.getAsJsonObject("config").getAsJsonArray("hosts").get(0).getAsJsonObject();
                    client.url = "jdbc:postgresql://" + host.get("host").getAsString() + ":" + host.get("port").getAsInt()
                            + "/postgres?user=lockchaos_client&preferQueryMode=simple&connectTimeout=" + OP_TIMEOUT_S
                            + "&socketTimeout=" + OP_TIMEOUT_S;
                    JsonObject lock = req.getAsJsonObject("lock");
                    client.retryMs = lock.has("retry_ms") ? lock.get("retry_ms").getAsLong() : 50;
                    log(req.get("client").getAsString() + " -> " + client.url + "; ledger's lock is (" + LOCK_TYPE + ", " + fnv1a32("ledger") + ")");
                    answer = new LinkedHashMap<>();
                    answer.put("type", "init_ok");
                    answer.put("capabilities", new String[0]);
                } else if (client == null) {
                    throw new Outcome("fail", type + " before init");
                } else if (type.equals("acquire")) {
                    answer = client.acquire(req);
                } else if (type.equals("release")) {
                    answer = client.release(req);
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
