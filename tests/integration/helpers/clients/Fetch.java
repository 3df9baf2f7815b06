// Fetch.java - Java's java.net.http.HttpClient as a workload uses it,
// for t_clients.sh (run from source: java Fetch.java ...).
//
//   java Fetch.java OUTDIR TAG URL AUTH [TAG URL AUTH...]
//
// HttpClient.newHttpClient(): no proxy (Java reads no proxy variable),
// the JVM's default trust store.  For each TAG, a GET of URL, with
// "Authorization: AUTH" unless AUTH is "-"; prints TAG.status=CODE and
// TAG.reason=X-MOAT-REASON, or TAG.status=ERROR and TAG.error=TEXT, and
// writes the body to OUTDIR/TAG.body.  The first line is
// version=java VERSION.

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

public class Fetch {
    static void out(String k, String v) {
        v = String.valueOf(v).replace('\n', ' ');
        System.out.println(k + "=" + (v.length() > 300 ? v.substring(0, 300) : v));
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || (args.length - 1) % 3 != 0) {
            System.err.println("usage: java Fetch.java OUTDIR TAG URL AUTH...");
            System.exit(2);
        }
        out("version", "java " + Runtime.version());
        HttpClient c = HttpClient.newHttpClient();
        for (int i = 1; i < args.length; i += 3) {
            String tag = args[i];
            try {
                HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(args[i + 1]))
                    .timeout(Duration.ofSeconds(15));
                if (!args[i + 2].equals("-"))
                    b.header("Authorization", args[i + 2]);
                HttpResponse<byte[]> r = c.send(b.build(),
                    HttpResponse.BodyHandlers.ofByteArray());
                Files.write(Path.of(args[0], tag + ".body"), r.body());
                out(tag + ".status", String.valueOf(r.statusCode()));
                out(tag + ".reason", r.headers().firstValue("X-Moat-Reason").orElse(""));
            } catch (Exception e) {
                out(tag + ".status", "ERROR");
                out(tag + ".error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
        }
    }
}
