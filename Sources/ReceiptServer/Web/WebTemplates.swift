import Mustache

/// The web view's pages as Mustache templates: `{{ }}` escapes for HTML, so every value that came
/// from a user is escaped; `{{{body}}}` is used once, for a page this library itself rendered.
/// Kept in the binary (no resource files to install), parsed once when the server starts.
enum WebTemplates {
    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        for (name, text) in [("layout", layout), ("signin", signin), ("zones", zones), ("zone", zone),
                             ("receipt", receipt), ("error", error)] {
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
    <form method="get" action="{{href}}" class="filters" role="search" aria-label="Filter receipts">
    <label>Words <input name="q" value="{{filter.q}}" type="search"></label>
    <label>From <input name="from" type="date" value="{{filter.from}}"></label>
    <label>To <input name="to" type="date" value="{{filter.to}}"></label>
    <label>Merchant <input name="merchant" value="{{filter.merchant}}"></label>
    <label>Category <input name="category" value="{{filter.category}}"></label>
    <label>Claim <select name="status">{{#statuses}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/statuses}}</select></label>
    <button type="submit">Filter</button>
    </form>
    {{#hasReceipts}}
    <table class="receipts">
    <caption>Receipts, newest first</caption>
    <thead><tr><th scope="col"><span class="sr">Image</span></th><th scope="col">Date</th><th scope="col">Merchant</th><th scope="col">Category</th><th scope="col" class="num">Total</th><th scope="col">Claim</th><th scope="col">Files</th></tr></thead>
    <tbody>
    {{#receipts}}<tr><td class="thumb">{{#thumb}}<img src="{{thumb}}" alt="" width="64" height="64" loading="lazy">{{/thumb}}</td><td>{{date}}</td><td><a href="{{href}}">{{merchant}}</a></td><td>{{category}}</td><td class="num">{{total}} {{currency}}</td><td>{{status}}</td><td>{{files}}</td></tr>
    {{/receipts}}
    </tbody>
    </table>
    {{/hasReceipts}}
    {{^receipts}}<p>No receipt matches.</p>{{/receipts}}
    <nav aria-label="Pages" class="pages">{{#previous}}<a href="{{previous}}" rel="prev">Newer</a>{{/previous}} {{#next}}<a href="{{next}}" rel="next">Older</a>{{/next}}</nav>
    {{#hasTotals}}
    <table class="totals"><caption>Totals of the matching receipts</caption>
    <thead><tr><th scope="col">Currency</th><th scope="col" class="num">Total</th><th scope="col" class="num">Receipts</th></tr></thead>
    <tbody>{{#totals}}<tr><td>{{currency}}</td><td class="num">{{total}}</td><td class="num">{{count}}</td></tr>{{/totals}}</tbody>
    </table>
    {{/hasTotals}}
    {{#canWrite}}
    <section aria-labelledby="add">
    <h2 id="add">Add receipts</h2>
    <form method="post" action="{{href}}/upload" enctype="multipart/form-data" class="stack">
    <input type="hidden" name="csrf" value="{{csrf}}">
    <label for="u-merchant">Merchant</label><input id="u-merchant" name="merchant">
    <label for="u-date">Date</label><input id="u-date" name="date" type="date">
    <label for="u-total">Total</label><input id="u-total" name="total" inputmode="decimal" placeholder="12.34">
    <label for="u-currency">Currency</label><input id="u-currency" name="currency" placeholder="EUR" maxlength="3">
    <label for="u-category">Category</label><input id="u-category" name="category">
    <label for="u-note">Note</label><textarea id="u-note" name="note" rows="3"></textarea>
    <fieldset><legend>Several files are</legend>
    <label><input type="radio" name="group" value="each" checked> one receipt each</label>
    <label><input type="radio" name="group" value="one"> pages of one receipt</label>
    </fieldset>
    <label for="u-files">Photos or PDFs</label>
    <input id="u-files" name="files" type="file" accept="image/*,application/pdf" capture="environment" multiple required>
    <button type="submit">Upload</button>
    </form>
    </section>
    {{/canWrite}}
    """

    static let receipt = """
    <p><a href="{{zoneHref}}">← {{zoneLabel}}</a></p>
    <h1>{{merchant}}</h1>
    {{#message}}<p class="notice" role="status">{{message}}</p>{{/message}}
    <dl>
    <dt>Date</dt><dd>{{date}}</dd>
    <dt>Total</dt><dd>{{total}} {{currency}}</dd>
    <dt>Category</dt><dd>{{category}}</dd>
    <dt>Note</dt><dd>{{note}}</dd>
    <dt>Tags</dt><dd>{{tags}}</dd>
    <dt>Claim</dt><dd>{{status}}{{#claim}} · {{claim}}{{/claim}}{{#reimbursedOn}} · reimbursed on {{reimbursedOn}}{{/reimbursedOn}}</dd>
    <dt>Id</dt><dd><code>{{id}}</code></dd>
    </dl>
    <h2>Attachments</h2>
    {{^attachments}}<p>None.</p>{{/attachments}}
    <ul class="attachments">
    {{#attachments}}<li>
    {{#isImage}}<figure><a href="{{href}}"><img src="{{href}}" alt="{{filename}}" loading="lazy"></a><figcaption>{{filename}}</figcaption></figure>{{/isImage}}
    <a href="{{href}}">{{#isPDF}}Open {{/isPDF}}{{filename}}</a> ({{mediaType}}, {{size}} bytes) · <a href="{{href}}?download=1">Download</a>
    </li>
    {{/attachments}}
    </ul>
    {{#canWrite}}
    <section aria-labelledby="edit">
    <h2 id="edit">Edit</h2>
    <form method="post" action="{{href}}" class="stack">
    <input type="hidden" name="csrf" value="{{csrf}}">
    <input type="hidden" name="changeTag" value="{{changeTag}}">
    <label for="e-merchant">Merchant</label><input id="e-merchant" name="merchant" value="{{merchantValue}}">
    <label for="e-date">Date</label><input id="e-date" name="date" type="date" value="{{date}}">
    <label for="e-total">Total</label><input id="e-total" name="total" inputmode="decimal" value="{{total}}">
    <label for="e-currency">Currency</label><input id="e-currency" name="currency" maxlength="3" value="{{currency}}">
    <label for="e-category">Category</label><input id="e-category" name="category" value="{{category}}">
    <label for="e-note">Note</label><textarea id="e-note" name="note" rows="3">{{note}}</textarea>
    <button type="submit">Save</button>
    </form>
    </section>
    {{/canWrite}}
    """

    static let error = """
    <h1>{{heading}}</h1>
    <p role="alert">{{message}}</p>
    <p><a href="/">Back to your zones</a></p>
    """

    static let stylesheet = """
    :root { color-scheme: light dark; --accent: #1a5fb4; font-family: system-ui, sans-serif; line-height: 1.4; }
    body { margin: 0 auto; max-width: 60rem; padding: 0 1rem 2rem; }
    header { display: flex; justify-content: space-between; align-items: center; gap: 1rem; flex-wrap: wrap;
             border-bottom: 1px solid #8884; padding: .5rem 0; }
    header form { margin: 0; }
    a { color: var(--accent); }
    a:focus, button:focus, input:focus, select:focus { outline: 3px solid #e5a50a; outline-offset: 2px; }
    .skip { position: absolute; left: -999px; }
    .skip:focus { left: 1rem; top: 1rem; background: Canvas; padding: .5rem; }
    table { border-collapse: collapse; width: 100%; margin: 1rem 0; }
    caption { text-align: left; font-weight: bold; padding: .25rem 0; }
    th, td { text-align: left; padding: .4rem; border-bottom: 1px solid #8884; vertical-align: top; }
    .num { text-align: right; font-variant-numeric: tabular-nums; }
    .stack { display: grid; gap: .4rem; max-width: 28rem; }
    .filters { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; }
    .filters label { display: grid; }
    input, select, button { font: inherit; padding: .4rem; }
    button { background: var(--accent); color: white; border: 0; border-radius: 4px; padding: .45rem 1rem; cursor: pointer; }
    .error { color: #c01c28; font-weight: bold; }
    .notice { color: #26a269; font-weight: bold; }
    .attachments { list-style: none; padding: 0; }
    .attachments li { margin: 0 0 1rem; }
    figure { margin: 0; }
    img { max-width: 100%; height: auto; border: 1px solid #8884; }
    dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
    dd { margin: 0; }
    .pages { display: flex; gap: 1rem; }
    .thumb img { width: 4rem; height: 4rem; object-fit: contain; border: 0; }
    .sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
    @media (max-width: 40rem) { .receipts th:nth-child(4), .receipts td:nth-child(4) { display: none; } }
    """
}
