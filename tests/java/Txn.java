import com.mongodb.client.ClientSession;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Updates;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.bson.Document;

/**
 * tierdb through the official Java driver: withTransaction and retryable
 * writes. Usage: java Txn mongodb://host:port/ — exits non-zero, with the
 * reason, when something is wrong.
 */
public class Txn {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    public static void main(String[] args) {
        try (MongoClient client = MongoClients.create(args[0])) {
            MongoCollection<Document> coll = client.getDatabase("java_txn").getCollection("acct");
            coll.drop();
            coll.insertMany(List.of(new Document("_id", "a").append("bal", 100), new Document("_id", "b").append("bal", 0)));

            AtomicInteger attempts = new AtomicInteger();
            try (ClientSession session = client.startSession()) {
                session.withTransaction(() -> {
                    int n = attempts.incrementAndGet();
                    coll.find(session, Filters.eq("_id", "a")).first();
                    if (n == 1) {
                        coll.updateOne(Filters.eq("_id", "a"), Updates.inc("bal", 1)); // a concurrent writer
                    }
                    coll.updateOne(session, Filters.eq("_id", "a"), Updates.inc("bal", -30));
                    coll.updateOne(session, Filters.eq("_id", "b"), Updates.inc("bal", 30));
                    return null;
                });
                check(attempts.get() == 2, "one write conflict, one retry: ran " + attempts.get() + " times");
                check(coll.find(Filters.eq("_id", "a")).first().getInteger("bal") == 71, "a's balance");
                check(coll.find(Filters.eq("_id", "b")).first().getInteger("bal") == 30, "b's balance");

                try {
                    session.withTransaction(() -> {
                        coll.insertOne(session, new Document("_id", "c"));
                        throw new IllegalStateException("callback gave up");
                    });
                    check(false, "withTransaction hid the callback's exception");
                } catch (IllegalStateException expected) {
                    // the transaction was aborted
                }
                check(coll.countDocuments(Filters.eq("_id", "c")) == 0, "an aborted insert is visible");
            }
            for (int i = 0; i < 10; i++) {
                coll.updateOne(Filters.eq("_id", "b"), Updates.inc("bal", 1));
            }
            check(coll.find(Filters.eq("_id", "b")).first().getInteger("bal") == 40, "retryable updates applied once each");
        }
        System.out.println("ok");
    }
}
