import com.mongodb.client.MongoChangeStreamCursor;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoDatabase;
import com.mongodb.client.model.Aggregates;
import com.mongodb.client.model.Filters;
import com.mongodb.client.model.Sorts;
import com.mongodb.client.model.Updates;
import com.mongodb.client.model.changestream.ChangeStreamDocument;
import com.mongodb.client.model.changestream.FullDocument;
import java.util.ArrayList;
import java.util.List;
import org.bson.Document;

/**
 * tierdb through the official Java driver: an aggregation with $lookup,
 * and watch() on a collection (with updateLookup) and on a database.
 * Usage: java AggWatch mongodb://host:port/ — exits non-zero, with the
 * reason, when something is wrong.
 */
public class AggWatch {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static ChangeStreamDocument<Document> next(MongoChangeStreamCursor<ChangeStreamDocument<Document>> c) {
        long deadline = System.currentTimeMillis() + 15000;
        while (System.currentTimeMillis() < deadline) {
            ChangeStreamDocument<Document> ev = c.tryNext();
            if (ev != null) {
                return ev;
            }
        }
        throw new AssertionError("no change event within 15 s");
    }

    public static void main(String[] args) {
        try (MongoClient client = MongoClients.create(args[0])) {
            MongoDatabase db = client.getDatabase("java_aggwatch");
            db.drop();
            MongoCollection<Document> orders = db.getCollection("orders");
            orders.insertMany(List.of(
                    new Document("_id", 1).append("item", "tea").append("qty", 2),
                    new Document("_id", 2).append("item", "jam").append("qty", 1),
                    new Document("_id", 3).append("item", "tea").append("qty", 5)));
            db.getCollection("stock").insertMany(List.of(
                    new Document("_id", "tea").append("price", 3), new Document("_id", "jam").append("price", 4)));
            List<Document> rows = orders.aggregate(List.of(
                    Aggregates.lookup("stock", "item", "_id", "s"),
                    Aggregates.unwind("$s"),
                    Document.parse("{$group: {_id: '$item', total: {$sum: {$multiply: ['$qty', '$s.price']}}}}"),
                    Aggregates.sort(Sorts.ascending("_id")))).into(new ArrayList<>());
            check(rows.equals(List.of(Document.parse("{_id: 'jam', total: 4}"), Document.parse("{_id: 'tea', total: 21}"))),
                    "$lookup aggregation: " + rows);

            try (MongoChangeStreamCursor<ChangeStreamDocument<Document>> cs =
                    orders.watch().fullDocument(FullDocument.UPDATE_LOOKUP).maxAwaitTime(200, java.util.concurrent.TimeUnit.MILLISECONDS).cursor()) {
                orders.insertOne(new Document("_id", 4).append("qty", 7));
                orders.updateOne(Filters.eq("_id", 4), Updates.inc("qty", 1));
                ChangeStreamDocument<Document> ins = next(cs);
                check(ins.getOperationTypeString().equals("insert") && ins.getDocumentKey().getInt32("_id").getValue() == 4, "insert: " + ins);
                ChangeStreamDocument<Document> upd = next(cs);
                check(upd.getOperationTypeString().equals("update"), "update: " + upd);
                check(upd.getFullDocument().equals(Document.parse("{_id: 4, qty: 8}")), "updateLookup: " + upd.getFullDocument());
            }
            try (MongoChangeStreamCursor<ChangeStreamDocument<Document>> ds =
                    db.watch().maxAwaitTime(200, java.util.concurrent.TimeUnit.MILLISECONDS).cursor()) {
                db.getCollection("other").insertOne(new Document("_id", "x"));
                ChangeStreamDocument<Document> ev = next(ds);
                check(ev.getNamespace().getCollectionName().equals("other"), "database stream: " + ev);
            }
            db.drop();
        }
        System.out.println("ok");
    }
}
