import Mustache

/// The web view's pages as Mustache templates: `{{ }}` escapes for HTML, so every value that came
/// from a user is escaped; `{{{body}}}` is used once, for a page this library itself rendered.
/// Kept in the binary (no resource files to install), parsed once when the server starts.
enum WebTemplates {
    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        for (name, text) in [("layout", layout), ("signin", signin), ("zones", zones), ("zone", zone),
                             ("receipt", receipt), ("error", error), ("review", review)] {
            // The templates are constants of this file: a parse error is a programming error that
            // the first test run shows, never something a user can cause.
            if let template = try? MustacheTemplate(string: text) { library.register(template, named: name) }
        }
        return library
    }()

    static func render(_ name: String, _ values: [String: Any]) -> String {
        library.render(values, withTemplate: name) ?? ""
    }

    static let layout = """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>{{title}} · receipt</title>
    <link rel="stylesheet" href="/web/style.css">
    </head>
    <body>
    <a class="skip" href="#main">Skip to content</a>
    <header>
    <nav aria-label="Site"><a href="/">receipt</a>{{#account}} · <span>signed in as <strong>{{account}}</strong></span>{{/account}}</nav>
    {{#account}}<form method="post" action="/signout"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Sign out</button></form>{{/account}}
    </header>
    <main id="main">
    {{{body}}}
    </main>
    </body>
    </html>
    """

    static let signin = """
    <h1>Sign in</h1>
    {{#message}}<p class="error" role="alert">{{message}}</p>{{/message}}
    <form method="post" action="/signin" class="stack">
    <label for="account">Account</label>
    <input id="account" name="account" autocomplete="username" required value="{{name}}" autofocus>
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password" required>
    <button type="submit">Sign in</button>
    </form>
    """

    static let zones = """
    <h1>Zones</h1>
    {{^zones}}<p>No zone is shared with the account {{account}} yet.</p>{{/zones}}
    {{#hasZones}}
    <table>
    <caption>Zones you can read</caption>
    <thead><tr><th scope="col">Zone</th><th scope="col">Owner</th><th scope="col">Your role</th></tr></thead>
    <tbody>
    {{#zones}}<tr><td><a href="{{href}}">{{label}}</a></td><td>{{owner}}</td><td>{{role}}</td></tr>
    {{/zones}}
    </tbody>
    </table>
    {{/hasZones}}
    """

    static let zone = """
    <h1>{{label}}</h1>
    <p>Your role: <strong>{{role}}</strong>. {{count}} receipt(s) match.</p>
    {{#toReview}}<p><a href="{{href}}/review" class="to-review">To review ({{toReview}})</a>: fields read from receipts' text, to accept or correct.</p>{{/toReview}}
    {{#hasTotals}}
    <table class="totals"><caption>Totals of the matching receipts</caption>
    <thead><tr><th scope="col">Total</th><th scope="col" class="num">Receipts</th></tr></thead>
    <tbody>{{#totals}}<tr><td class="num">{{total}}</td><td class="num">{{count}}</td></tr>{{/totals}}</tbody>
    </table>
    {{/hasTotals}}
    {{#canWrite}}
    <form method="post" action="{{href}}/upload" enctype="multipart/form-data" class="add" aria-labelledby="add">
    <h2 id="add">Add receipt</h2>
    <input type="hidden" name="csrf" value="{{csrf}}">
    <label for="u-files">Photos or PDFs (the camera is offered on a phone)</label>
    <input id="u-files" name="files" type="file" accept="image/*,application/pdf" capture="environment" multiple required>
    <details><summary>Merchant, date, total… (optional)</summary>
    <div class="stack">
    <label for="u-merchant">Merchant</label><input id="u-merchant" name="merchant">
    <label for="u-date">Date</label><input id="u-date" name="date" type="date">
    <label for="u-total">Total</label><input id="u-total" name="total" inputmode="decimal" placeholder="12.34">
    <label for="u-currency">Currency</label><input id="u-currency" name="currency" placeholder="EUR" maxlength="3">
    <label for="u-category">Category</label><input id="u-category" name="category">
    <label for="u-note">Note</label><textarea id="u-note" name="note" rows="2"></textarea>
    <fieldset><legend>Several files are</legend>
    <label><input type="radio" name="group" value="each" checked> one receipt each</label>
    <label><input type="radio" name="group" value="one"> pages of one receipt</label>
    </fieldset>
    </div>
    </details>
    <button type="submit">Upload</button>
    </form>
    {{/canWrite}}
    <details class="fold"{{#filtered}} open{{/filtered}}><summary>Filter and order{{#filtered}} (filtered){{/filtered}}</summary>
    <form method="get" action="{{href}}" class="filters" role="search" aria-label="Filter receipts">
    <label>Words <input name="q" value="{{filter.q}}" type="search"></label>
    <label>From <input name="from" type="date" value="{{filter.from}}"></label>
    <label>To <input name="to" type="date" value="{{filter.to}}"></label>
    <label>Merchant <input name="merchant" value="{{filter.merchant}}"></label>
    <label>Category <input name="category" value="{{filter.category}}"></label>
    <label>Claim <select name="status">{{#statuses}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/statuses}}</select></label>
    <label>Order <select name="sort">{{#sorts}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/sorts}}</select></label>
    <button type="submit">Filter</button>
    </form>
    </details>
    {{#hasReceipts}}
    {{#downloadZip}}<p class="downloads">Download these {{count}}: <a href="{{downloadZip}}">zip of their files</a> · <a href="{{downloadClaim}}">claim package</a></p>{{/downloadZip}}
    {{#canWrite}}<form method="post" action="{{href}}/bulk" class="bulk" aria-label="Change the selected receipts">
    <input type="hidden" name="csrf" value="{{csrf}}">{{/canWrite}}
    <table class="receipts">
    <caption>Receipts, {{order}}</caption>
    <thead><tr>{{#canWrite}}<th scope="col" class="pick"><span class="sr">Select</span></th>{{/canWrite}}<th scope="col" class="thumb"><span class="sr">Image</span></th><th scope="col" class="date">Date</th><th scope="col" class="merchant">Merchant</th><th scope="col" class="category">Category</th><th scope="col" class="num total">Total</th><th scope="col" class="status">Claim</th><th scope="col" class="files">Files</th></tr></thead>
    <tbody>
    {{#receipts}}<tr>{{#canWrite}}<td class="pick"><input type="checkbox" name="id" value="{{id}}" aria-label="Select {{merchant}} {{date}}"></td>{{/canWrite}}<td class="thumb">{{#thumb}}<img src="{{thumb}}" alt="Scan of {{merchant}}" width="64" height="64" loading="lazy">{{/thumb}}</td><td class="date">{{date}}</td><td class="merchant"><a href="{{href}}">{{merchant}}</a></td><td class="category">{{category}}</td><td class="num total">{{total}}</td><td class="status">{{status}}</td><td class="files">{{files}} file(s)</td></tr>
    {{/receipts}}
    </tbody>
    </table>
    {{#canWrite}}
    <fieldset class="bulk-fields"><legend>Set for the selected receipts (a blank field is left as it is)</legend>
    <label>Category <input name="category"></label>
    <label>Claim <select name="status"><option value="">leave</option>{{#claimStatuses}}<option value="{{.}}">{{.}}</option>{{/claimStatuses}}</select></label>
    <label>Claim reference <input name="claim"></label>
    <label>Add tags <input name="tags" placeholder="hsa, 2026"></label>
    <button type="submit">Apply to selected</button>
    </fieldset>
    </form>
    {{/canWrite}}
    {{/hasReceipts}}
    {{^receipts}}<p>No receipt matches.</p>{{/receipts}}
    <nav aria-label="Pages" class="pages">{{#previous}}<a href="{{previous}}" rel="prev">Previous page</a>{{/previous}} {{#next}}<a href="{{next}}" rel="next">Next page</a>{{/next}}</nav>
    """

    static let receipt = """
    <p><a href="{{zoneHref}}">← {{zoneLabel}}</a></p>
    <h1>{{merchant}}</h1>
    {{#place}}<nav aria-label="Receipts of the list" class="pages">{{#previousReceipt}}<a href="{{previousReceipt}}" rel="prev">Previous receipt</a>{{/previousReceipt}} <span>{{place}}</span> {{#nextReceipt}}<a href="{{nextReceipt}}" rel="next">Next receipt</a>{{/nextReceipt}}</nav>{{/place}}
    <div class="receipt">
    <div class="preview">
    {{^attachments}}<p>No file.</p>{{/attachments}}
    <ul class="attachments">
    {{#attachments}}<li>
    {{#preview}}<figure><a href="{{href}}"><img src="{{preview}}" alt="{{alt}}" loading="lazy"></a><figcaption>{{filename}}</figcaption></figure>{{/preview}}
    <a href="{{href}}">{{#isPDF}}Open {{/isPDF}}{{filename}}</a> ({{mediaType}}, {{size}}) · <a href="{{href}}?download=1">Download</a>
    {{#pageCount}}<p>{{pageCount}} pages: {{#pages}}<a href="{{href}}">page {{page}}</a> {{/pages}}</p>{{/pageCount}}
    {{#text}}<details class="fold"><summary>Text read from {{filename}}</summary><pre class="text">{{text}}</pre></details>{{/text}}
    </li>
    {{/attachments}}
    </ul>
    </div>
    <div class="details">
    <dl>
    {{#date}}<dt>Date</dt><dd>{{date}}</dd>{{/date}}
    {{#total}}<dt>Total</dt><dd>{{total}}</dd>{{/total}}
    {{#category}}<dt>Category</dt><dd>{{category}}</dd>{{/category}}
    {{#note}}<dt>Note</dt><dd class="note">{{note}}</dd>{{/note}}
    {{#tags}}<dt>Tags</dt><dd>{{tags}}</dd>{{/tags}}
    <dt>Claim</dt><dd>{{status}}{{#claim}} · {{claim}}{{/claim}}{{#reimbursedOn}} · reimbursed on {{reimbursedOn}}{{/reimbursedOn}}</dd>
    <dt>Id</dt><dd><code>{{id}}</code></dd>
    </dl>
    {{#canWrite}}
    <section aria-labelledby="edit">
    <h2 id="edit">Edit</h2>
    <form method="post" action="{{href}}" class="stack">
    <input type="hidden" name="csrf" value="{{csrf}}">
    <input type="hidden" name="changeTag" value="{{changeTag}}">
    <label for="e-merchant">Merchant</label><input id="e-merchant" name="merchant" value="{{form.merchant}}">
    <label for="e-date">Date</label><input id="e-date" name="date" type="date" value="{{form.date}}">
    <label for="e-total">Total</label><input id="e-total" name="total" inputmode="decimal" value="{{form.total}}">
    <label for="e-currency">Currency</label><input id="e-currency" name="currency" maxlength="3" value="{{form.currency}}">
    <label for="e-category">Category</label><input id="e-category" name="category" value="{{form.category}}">
    <label for="e-note">Note</label><textarea id="e-note" name="note" rows="3">{{form.note}}</textarea>
    <label for="e-tags">Tags (comma-separated)</label><input id="e-tags" name="tags" value="{{form.tags}}">
    <label for="e-status">Claim</label><select id="e-status" name="status">{{#statusOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/statusOptions}}</select>
    <label for="e-claim">Claim reference</label><input id="e-claim" name="claim" value="{{form.claim}}">
    <label for="e-reimbursed">Reimbursed on</label><input id="e-reimbursed" name="reimbursedOn" type="date" value="{{form.reimbursedOn}}">
    <button type="submit">Save</button>
    </form>
    </section>
    {{/canWrite}}
    </div>
    </div>
    """

    static let error = """
    <h1>{{heading}}</h1>
    <p role="alert">{{message}}</p>
    <p>{{advice}}</p>
    {{#open}}<p><a href="{{open}}">{{openLabel}}</a></p>{{/open}}
    <p>{{#back}}<a href="{{back}}">Back to where you were</a> · {{/back}}<a href="/">Your zones</a></p>
    """
}
