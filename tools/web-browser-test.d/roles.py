"""Each role in the browser: owner olga, write member walt, read member rita, outsider otto each see
exactly what their role allows; word search and the claim filter; thumbnails made once per blob; a
browser upload reaches a member's vault through `receipt sync` with identical bytes; a read member
downloads the list as a claim package whose SHA256SUMS verifies; an outsider's guessed URLs answer
404; a cross-site form post is refused. `sessions` (run last: its failed sign-ins slow rita down)
checks that a revoked session ends and that repeated failed sign-ins are slowed down."""
import http.server
import os
import subprocess
import threading
import urllib.parse

from driver import FIXTURES, check


def run(web):
    By, driver, base = web.By, web.driver, web.base
    olga = web.vault("olga")
    png = os.path.join(FIXTURES, "warranty-card.png")
    web.run("import", png, "--merchant", "Bakery <b>Ben</b>", "--date", "2026-11-20", "--total", "12.34",
            "--currency", "EUR", "--category", "food", vault=olga)
    web.run("import", os.path.join(FIXTURES, "2025", "pharmacy.png"), "--merchant", "Pharmacy", "--date", "2026-11-19",
            "--total", "30.00", "--currency", "USD", "--note", "flu shot", vault=olga)
    pharmacy = [r for r in web.listed("olga", "personal") if r["merchant"] == "Pharmacy"][0]
    web.run("edit", pharmacy["id"], "--status", "submitted", "--claim", "HSA-2026-7", vault=olga)
    web.run("zone", "create", "private", vault=olga)
    web.run("import", png, "--zone", "private", "--merchant", "Secret shop", "--date", "2026-11-21", vault=olga)
    # The private zone also gets a real PDF and a damaged photo (JPEG magic bytes, then noise).
    broken = os.path.join(web.work, "broken.jpg")
    with open(broken, "wb") as f:
        f.write(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + os.urandom(4000))
    web.run("import", os.path.join(FIXTURES, "2025", "hotel-invoice.pdf"), "--zone", "private", "--merchant", "Hotel",
            "--date", "2026-11-18", vault=olga)
    web.run("import", broken, "--zone", "private", "--merchant", "Damaged", "--date", "2026-11-17", vault=olga)
    # The text olga's vault extracts (OCR of the photos) reaches the server with her sync.
    web.run("index", vault=olga)
    web.run("sync", vault=olga)
    web.run("share", "personal", "walt", "--role", "write", vault=olga)
    web.run("share", "personal", "rita", "--role", "read", vault=olga)
    bakery = [r for r in web.listed("olga", "personal") if r["merchant"].startswith("Bakery")][0]
    secret = [r for r in web.listed("olga", "private") if r["merchant"] == "Secret shop"][0]
    receipt_path = f"/z/olga/personal/r/{bakery['id']}"
    blob_path = f"{receipt_path}/f/{bakery['attachments'][0]['sha256']}"
    secret_path = f"/z/olga/private/r/{secret['id']}"
    web.set_size(412, 915)

    def zone_rows():
        return [(r.find_elements(By.TAG_NAME, "td")[0].text, r.find_elements(By.TAG_NAME, "td")[2].text)
                for r in web.find_all("main table tbody tr")]

    # Before sign-in: the sign-in page, nothing else.
    driver.delete_all_cookies()
    web.get("/")
    check(web.find_all("input[name=account]") and web.find_all("input[name=password][type=password]"), "GET / is the sign-in form")
    web.shot("roles-01-sign-in")
    check(web.status_of(receipt_path)[0] in (200, 303) and "Bakery" not in web.status_of(receipt_path)[1],
          "a receipt is not shown without a session")
    check(web.status_of("/v1/zones", headers={"Authorization": "Bearer " + web.tokens["olga"]})[0] == 200,
          "the sync API's bearer tokens keep working")

    # The owner.
    olga_cookie = web.sign_in("olga")
    rows = zone_rows()
    check(("personal", "owner") in rows and ("private", "owner") in rows, f"olga sees her zones as owner: {rows}")
    web.shot("roles-02-zones-owner")
    web.get("/z/olga/personal")
    check("Bakery <b>Ben</b>" in web.main_text(), "metadata is shown escaped")
    check("<b>Ben</b>" not in driver.page_source, "no user data reaches the page as markup")
    check(len(web.find_all("input[type=file]")) == 1, "the owner gets an upload form")
    check("12.34" in web.find("table.totals").text, "totals per currency under the list")
    web.shot("roles-03-zone-owner")

    def unfold(selector):
        fold = web.find(selector)
        if fold.get_attribute("open") is None:
            fold.find_element(By.TAG_NAME, "summary").click()

    def listed_merchants():
        return [r.find_element(By.CSS_SELECTOR, "td.merchant").text for r in web.find_all("table.receipts tbody tr")]

    def filter_by(**fields):
        web.get("/z/olga/personal")
        unfold("details.fold")
        form = web.find("form.filters")
        for name, value in fields.items():
            element = form.find_element(By.NAME, name)
            if element.tag_name == "select":
                element.find_element(By.CSS_SELECTOR, f"option[value='{value}']").click()
            else:
                element.send_keys(value)
        form.find_element(By.TAG_NAME, "button").click()
        web.wait(30, lambda d: "?" in d.current_url)
        return listed_merchants()

    check(filter_by(status="submitted") == ["Pharmacy"], "the claim filter 'submitted' lists the submitted receipt only")
    check("USD" in web.find("table.totals").text and "EUR" not in web.find("table.totals").text, "totals follow the filter")
    web.shot("roles-03b-zone-filtered-by-claim")
    check(filter_by(status="none") == ["Bakery <b>Ben</b>"], "the claim filter 'none' lists the unclaimed receipt only")
    check(filter_by(q="FLU") == ["Pharmacy"], "a word search finds a receipt by its note, whatever the case")
    check(filter_by(q="hsa-2026-7 shot") == ["Pharmacy"], "every word must match (claim reference and note)")
    check(filter_by(q="flu bakery") == [], "a word no matching receipt has leaves the list empty")
    check(filter_by(q='"Flu" (sho* - NEAR(') == [] and web.find_all("form.filters"),
          "quotes, parentheses, * and operators are searched as words, never an error page")
    check(filter_by(q='"Flu" (sho* -') == ["Pharmacy"], "a quoted word and a parenthesised prefix find the receipt")
    check(filter_by(q="cordless drill") == ["Bakery <b>Ben</b>"],
          "words only the photo's OCR text holds find the receipt (text synced from olga's vault)")
    thumbnails(web, olga_cookie)
    web.get(receipt_path)
    images = web.find_all("ul.attachments img")
    # Loaded and decoded (a broken image has no natural width); the fixture's photo is 900 px wide or so.
    # Waited for: the image is lazy, so it may still be on its way when the page's load event fires.
    check(len(images) == 1, "the receipt page has its image")
    web.wait(30, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 100", images[0]))
    check(True, "the receipt page shows its image")
    web.shot("roles-04-receipt-owner")
    uploaded_url = write_member(web, olga)
    cross_site(web, receipt_path)
    read_member(web, uploaded_url, secret_path)
    outsider(web, receipt_path, blob_path, secret_path)


def thumbnails(web, olga_cookie):
    """Made once per blob by convert/pdftoppm, cached by hash; a damaged image gets the placeholder."""
    By = web.By
    web.get("/z/olga/private")
    thumbs = {r.find_element(By.CSS_SELECTOR, "td.merchant").text: r.find_element(By.CSS_SELECTOR, "td.thumb img")
              for r in web.find_all("table.receipts tbody tr")}
    check(sorted(thumbs) == ["Damaged", "Hotel", "Secret shop"], f"the private zone lists its three receipts: {sorted(thumbs)}")
    web.wait(60, lambda d: all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i)
                               for i in thumbs.values()))
    check(True, "every row's thumbnail is shown in the browser")
    kinds = {}
    for name, image in thumbs.items():
        code, kind, body = web.fetch(urllib.parse.urlparse(image.get_attribute("src")).path, olga_cookie)
        kinds[name] = kind
        check(code == 200, f"{name}'s thumbnail answers 200")
    check(kinds["Hotel"] == "image/png" and kinds["Secret shop"] == "image/png",
          f"the PDF's first page and the PNG photo are rendered as PNG thumbnails: {kinds}")
    check(kinds["Damaged"] == "image/svg+xml", f"the damaged photo gets the placeholder, not an error: {kinds}")
    cached = [os.path.join(root, name) for root, _, names in os.walk(os.path.join(web.data, "thumbs")) for name in names]
    private_shas = {a["sha256"] for r in web.listed("olga", "private") for a in r["attachments"]}
    made = {os.path.basename(p).split(".")[0]: os.path.basename(p).split(".")[1] for p in cached}
    check(private_shas <= set(made) and sorted(made[sha] for sha in private_shas) == ["failed", "png", "png"]
          and all(os.stat(p).st_mode & 0o777 == 0o600 for p in cached),
          f"thumbnails are cached by hash under the data folder as 0600 files: {cached}")
    before = {p: os.stat(p).st_mtime_ns for p in cached}
    web.driver.refresh()
    web.wait(60, lambda d: all(d.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i)
                               for i in d.find_elements(By.CSS_SELECTOR, "td.thumb img")))
    check({p: os.stat(p).st_mtime_ns for p in cached} == before, "a second view makes no thumbnail again")
    web.shot("roles-03c-thumbnails")


def write_member(web, olga):
    """Walt sees the shared zone only, uploads from the browser, edits; the upload reaches olga's vault."""
    web.sign_in("walt")
    rows = [(r.find_elements(web.By.TAG_NAME, "td")[0].text, r.find_elements(web.By.TAG_NAME, "td")[2].text)
            for r in web.find_all("main table tbody tr")]
    check(rows == [("olga/personal", "write")], f"walt sees olga/personal as write, nothing else: {rows}")
    web.get("/z/olga/personal")
    upload_file = os.path.join(web.work, "till slip.pdf")
    with open(upload_file, "wb") as f:
        f.write(b"%PDF-1.4\n% a receipt from the browser\n" + os.urandom(300000) + b"\n%%EOF\n")
    details = web.find("form.add details")
    if details.get_attribute("open") is None:
        details.find_element(web.By.TAG_NAME, "summary").click()
    web.find("#u-merchant").send_keys("Market")
    web.driver.execute_script("arguments[0].value = '2026-11-25'", web.find("#u-date"))
    web.find("#u-total").send_keys("7.50")
    web.find("#u-currency").send_keys("EUR")
    web.find("#u-files").send_keys(upload_file)
    web.shot("roles-05-upload-form")
    web.find("form[enctype='multipart/form-data'] button").click()
    web.wait(60, lambda d: "/r/" in d.current_url)
    check("Market" in web.find("h1").text, "the upload becomes a receipt")
    uploaded_url = web.driver.current_url
    web.shot("roles-06-uploaded-receipt")
    merchant = web.find("#e-merchant")
    merchant.clear()
    merchant.send_keys("Market hall")
    web.find("section[aria-labelledby=edit] button").click()
    web.wait(30, lambda d: "Market hall" in d.find_element(web.By.TAG_NAME, "h1").text)
    check(True, "walt edits the receipt's merchant")
    web.run("sync", vault=olga)
    market = [r for r in web.listed("olga", "personal") if r["merchant"] == "Market hall"]
    check(len(market) == 1 and market[0]["date"] == "2026-11-25" and market[0]["total"] == "7.50",
          f"olga's vault has the browser's receipt after sync: {market}")
    sha = market[0]["attachments"][0]["sha256"]
    pulled = subprocess.run([web.receipt, "--vault", olga, "cat", sha], capture_output=True, timeout=60).stdout
    with open(upload_file, "rb") as f:
        check(pulled == f.read(), "the uploaded file's bytes are identical in olga's vault")
    check(market[0]["attachments"][0]["filename"] == "till slip.pdf", "the file name is kept")
    return uploaded_url


def cross_site(web, receipt_path):
    """A form post from another origin, while walt is signed in, is refused and changes nothing."""
    attacker_dir = os.path.join(web.work, "attacker")
    os.makedirs(attacker_dir)
    with open(os.path.join(attacker_dir, "index.html"), "w") as f:
        f.write(f"""<!doctype html><form method="post" action="{web.base}{receipt_path}">
<input name="merchant" value="Hacked"><input name="csrf" value="guess"><button id="go">go</button></form>""")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a, **k: Quiet(*a, directory=attacker_dir, **k))
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    web.driver.get(f"http://localhost:{attacker.server_address[1]}/index.html")
    web.find("#go").click()
    web.wait(30, lambda d: d.current_url.startswith(web.base))
    check("refused" in web.driver.page_source, "a cross-site form post is refused")
    attacker.shutdown()
    web.get(receipt_path)
    check("Hacked" not in web.driver.page_source and "Bakery" in web.driver.page_source, "the forged edit changed nothing")


def read_member(web, uploaded_url, secret_path):
    """Rita sees, cannot change, and may download."""
    rita_cookie = web.sign_in("rita")
    rows = [(r.find_elements(web.By.TAG_NAME, "td")[0].text, r.find_elements(web.By.TAG_NAME, "td")[2].text)
            for r in web.find_all("main table tbody tr")]
    check(rows == [("olga/personal", "read")], f"rita sees olga/personal as read: {rows}")
    web.get("/z/olga/personal")
    check(not web.find_all("input[type=file]"), "a read member gets no upload form")
    check("Market hall" in web.driver.page_source, "rita sees walt's upload")
    web.shot("roles-07-zone-read-member")
    web.driver.get(uploaded_url)
    check(not web.find_all("#e-merchant"), "a read member gets no edit form")
    pdf_link = web.find("ul.attachments a").get_attribute("href")
    check(web.status_of(urllib.parse.urlparse(pdf_link).path, cookie=rita_cookie)[0] == 200, "rita may open the PDF")
    code, _ = web.post_form(urllib.parse.urlparse(uploaded_url).path, rita_cookie, {"csrf": web.csrf(), "merchant": "Changed by rita"})
    check(code == 403, f"the server refuses rita's edit with 403 (got {code})")
    code, _ = web.status_of("/z/olga/personal/upload", cookie=rita_cookie, method="POST", body=b"x",
                            headers={"Content-Type": "multipart/form-data; boundary=abc"})
    check(code == 403, f"the server refuses rita's upload with 403 (got {code})")
    check(web.status_of(secret_path, cookie=rita_cookie)[0] == 404, "rita's guess at olga's private zone answers 404")
    web.get("/z/olga/personal")
    link = urllib.parse.urlparse(web.driver.find_element(web.By.LINK_TEXT, "claim package").get_attribute("href"))
    code, kind, body = web.fetch(link._replace(scheme="", netloc="").geturl(), rita_cookie)
    with open(os.path.join(web.work, "claim.zip"), "wb") as f:
        f.write(body)
    unzipped = subprocess.run(["unzip", "-q", os.path.join(web.work, "claim.zip"), "-d", os.path.join(web.work, "claim")])
    sums = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=os.path.join(web.work, "claim"), capture_output=True)
    check(code == 200 and kind == "application/zip" and unzipped.returncode == 0 and sums.returncode == 0,
          f"rita downloads the list as a claim package and its SHA256SUMS verifies ({code}, {kind})")


def outsider(web, receipt_path, blob_path, secret_path):
    otto_cookie = web.sign_in("otto")
    check(not web.find_all("main table tbody tr"), "otto sees no zone")
    web.shot("roles-08-zones-outsider")
    for path in (receipt_path, blob_path, "/z/olga/personal", secret_path, "/z/olga/nothing-here", receipt_path[:-4] + "0000"):
        code, body = web.status_of(path, cookie=otto_cookie)
        check(code == 404 and "Bakery" not in body, f"otto's guess {path} answers 404")
    code, _ = web.status_of("/z/olga/personal/upload", cookie=otto_cookie, method="POST", body=b"x",
                            headers={"Content-Type": "multipart/form-data; boundary=abc"})
    check(code == 404, f"otto's upload to a zone he cannot read answers 404 (got {code})")
    web.get(receipt_path)
    web.shot("roles-09-not-found-outsider")


def sessions(web):
    """Revoked sessions end at the next request; repeated failed sign-ins are slowed down."""
    web.sign_in("otto")
    web.run("server", "sessions-revoke", "otto", "--data", web.data, *web.catalog)
    web.get("/")
    check(web.find_all("input[name=password]"), "a revoked session is signed out")
    codes = []
    for _ in range(5):
        codes.append(web.post_form("/signin", None, {"account": "rita", "password": "wrong-password"})[0])
    check(codes[:3] == [401, 401, 401] and 429 in codes[3:], f"failed sign-ins are slowed down: {codes}")
