"""The web view on a phone and on a desktop, and the claim workflow, in olga's zone `claims` (rita
reads it). At 320x640, 390x844 and 1280x800: no page scrolls sideways (zones, list, receipt, a
not-found page), every list thumbnail is wider than 40 px, the upload control is inside the first
screen. Then: an upload without a date is listed first; the same photo again is refused with a link
to its receipt; olga sets the claim of two receipts at once from the list (her vault pulls both
changes) and rita's bulk change is refused; the list downloads as a claim package whose SHA256SUMS
verifies; a receipt steps to the next and previous within the filter; a multi-line note and a total
of 4 decimals survive two saves unchanged."""
import os
import shutil
import subprocess

from driver import FIXTURES, SIZES, check

ZONE = "/z/olga/claims"


def run(web):
    By, driver = web.By, web.driver
    olga = web.vault("olga")
    web.run("zone", "create", "claims", vault=olga)
    for i, (path, merchant, day) in enumerate([("warranty-card.png", "A rather long merchant name, Bakery and Coffee House", "2026-11-20"),
                                               ("2025/pharmacy.png", "Pharmacy", "2026-11-19"),
                                               ("2025/hotel-invoice.pdf", "Hotel", "2026-11-18")]):
        web.run("import", os.path.join(FIXTURES, path), "--zone", "claims", "--merchant", merchant, "--date", day,
                "--total", f"{1004 + i}.5", "--currency", "EUR", "--category", "health", vault=olga)
    web.run("sync", vault=olga)
    web.run("share", "claims", "rita", "--role", "read", vault=olga)

    web.sign_in("olga")
    for width, height in SIZES:
        web.set_size(width, height)
        for page, path in (("the zones page", "/"), ("a not-found page", "/z/olga/nothing-here")):
            web.get(path)
            web.no_sideways_scroll(page, width)
            web.shot(f"{'zones' if path == '/' else 'not-found'}-{width}")
        web.get(ZONE)
        web.wait(60, lambda d: web.images_loaded())
        web.no_sideways_scroll("the list", width)
        widths = driver.execute_script("return [...document.querySelectorAll('td.thumb img')].map(i => i.getBoundingClientRect().width)")
        check(len(widths) == 3 and min(widths) > 40, f"every thumbnail at {width} px is wider than 40 px: {widths}")
        top = driver.execute_script("return document.getElementById('u-files').getBoundingClientRect().top")
        check(top < height, f"the upload control at {width}x{height} is inside the first screen (top {top:.0f})")
        web.shot(f"list-{width}")
        web.whole_page_shot(f"list-{width}-whole", width, height)
        web.find("td.merchant a").click()
        web.wait(30, lambda d: "/r/" in d.current_url and web.images_loaded())
        web.no_sideways_scroll("a receipt page", width)
        web.shot(f"receipt-{width}")
        web.whole_page_shot(f"receipt-{width}-whole", width, height)
    text = web.main_text()
    check("1,006.50 EUR" in text or "1,004.50 EUR" in text, "a total shows its currency's minor units and thousands")

    # An upload without a date is listed first (newest added first), not on the last page.
    web.set_size(390, 844)
    web.get(ZONE)
    upload = os.path.join(web.work, "dateless.png")
    shutil.copy(os.path.join(FIXTURES, "warranty-card.png"), upload)
    with open(upload, "ab") as f:
        f.write(b"another photo")
    web.find("#u-files").send_keys(upload)
    web.find("form.add button[type=submit]").click()
    web.wait(60, lambda d: "/r/" in d.current_url)
    web.get(ZONE)
    first = web.find("table.receipts tbody tr td.date").text
    check(first == "", f"the upload without a date is the list's first row (its date: {first!r})")

    # The same photo uploaded again is not a second receipt: the page says where it is.
    web.find("#u-files").send_keys(os.path.join(FIXTURES, "warranty-card.png"))
    web.find("form.add button[type=submit]").click()
    web.wait(60, lambda d: d.find_elements(By.TAG_NAME, "h1") and "claims" not in d.title)
    check("Already here" in web.find("h1").text, "a photo uploaded again says it is already here")
    web.shot("already-here-390")
    driver.find_element(By.PARTIAL_LINK_TEXT, "Open the receipt that has").click()
    web.wait(30, lambda d: "/r/" in d.current_url)
    check("Bakery" in web.find("h1").text, "its link opens the receipt that has the photo")
    web.get(ZONE)
    check(len(web.find_all("table.receipts tbody tr")) == 4, "and no copy was made")
    picked = bulk(web, olga)
    download(web)
    steps(web)
    saves(web, olga, picked[0])
    refused(web, picked[0])


def bulk(web, olga):
    """Two receipts at once from the list: olga's vault pulls both changes, the others stay."""
    boxes = web.find_all("td.pick input[type=checkbox]")
    picked = [b.get_attribute("value") for b in boxes[1:3]]
    for box in boxes[1:3]:
        box.click()
    web.find(".bulk-fields select[name=status] option[value=submitted]").click()
    web.find(".bulk-fields input[name=claim]").send_keys("HSA-2026-9")
    web.find(".bulk-fields input[name=tags]").send_keys("hsa, 2026")
    web.shot("bulk-390")
    web.find(".bulk-fields button").click()
    web.wait(30, lambda d: d.current_url.rstrip("/") == web.base + ZONE)
    web.run("sync", vault=olga)
    listed = {r["id"]: r for r in web.listed("olga", "claims")}
    check(all(listed[i].get("status") == "submitted" and listed[i].get("claim") == "HSA-2026-9"
              and {"hsa", "2026"} <= set(listed[i].get("tags", [])) for i in picked),
          "olga's bulk change reaches her vault: both receipts submitted, with the claim and tags")
    check(all(r.get("status") in (None, "none") for i, r in listed.items() if i not in picked), "the receipts not selected are unchanged")
    return picked


def download(web):
    """"Download these": the filtered list as a claim package, downloaded by the browser."""
    web.get(ZONE + "?status=submitted")
    web.driver.find_element(web.By.LINK_TEXT, "claim package").click()
    package = os.path.join(web.downloads, "claims-claim.zip")
    web.wait(60, lambda d: os.path.exists(package) and not any(n.endswith(".crdownload") for n in os.listdir(web.downloads)))
    unpacked = os.path.join(web.work, "claim-package")
    check(subprocess.run(["unzip", "-q", package, "-d", unpacked]).returncode == 0, "the claim package is a zip")
    names = sorted(os.listdir(unpacked))
    check(len([n for n in names if n[:3].isdigit()]) == 2 and {"SHA256SUMS", "index.csv", "summary.txt"} <= set(names),
          f"the claim package holds the two submitted receipts' files, index.csv, summary.txt and SHA256SUMS: {names}")
    verified = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=unpacked, capture_output=True, text=True)
    check(verified.returncode == 0, f"the downloaded claim package's SHA256SUMS verifies: {verified.stdout.strip()}")


def steps(web):
    """Previous / next within the filter: from the filtered list's first receipt to its second and back."""
    driver, By = web.driver, web.By
    rows = [a.get_attribute("href") for a in web.find_all("td.merchant a")]
    driver.get(rows[0])
    driver.find_element(By.LINK_TEXT, "Next receipt").click()
    web.wait(30, lambda d: d.current_url == rows[1])
    check("status=submitted" in driver.current_url and "1 of 2" not in driver.page_source and "2 of 2" in driver.page_source,
          "a receipt's Next link opens the filtered list's next receipt, keeping the filter")
    check(not driver.find_elements(By.LINK_TEXT, "Next receipt"), "the filter's last receipt has no Next link")
    web.shot("receipt-next-390")
    driver.find_element(By.LINK_TEXT, "Previous receipt").click()
    web.wait(30, lambda d: d.current_url == rows[0])
    check(True, "and its Previous link goes back")


def saves(web, olga, receipt_id):
    """A multi-line note set in the browser and a total of 4 decimals set on the command line survive
    two saves of the form: a save with no change changes nothing."""
    web.run("edit", receipt_id, "--total", "1004.1234", vault=olga)
    web.run("sync", vault=olga)
    web.get(f"{ZONE}/r/{receipt_id}")
    check(web.find("#e-total").get_attribute("value") == "1004.1234", "the edit form shows the total's 4 decimals")
    note = web.find("#e-note")
    note.clear()
    note.send_keys("first line\nsecond line")
    for _ in range(2):
        web.submit("section[aria-labelledby=edit] button")
        web.wait(30, lambda d: d.find_elements(web.By.ID, "e-note"))
    web.run("sync", vault=olga)
    again = [r for r in web.listed("olga", "claims") if r["id"] == receipt_id][0]
    check(again.get("note") == "first line\nsecond line" and again.get("total") == "1004.1234" and again.get("claim") == "HSA-2026-9",
          f"a multi-line note, a total of 4 decimals and the claim survive two saves: {again.get('note')!r} {again.get('total')!r}")


def refused(web, receipt_id):
    """A read member gets no selection, and a bulk change sent anyway is refused."""
    olga_cookie = web.driver.get_cookie("receipt_session")["value"]
    rita = web.sign_in("rita")
    web.get(ZONE)
    check(not web.find_all("td.pick input"), "rita (read) gets no selection boxes")
    status, _ = web.post_form(ZONE + "/bulk", rita, [("csrf", web.csrf()), ("id", receipt_id), ("status", "denied")])
    check(status == 403, f"rita's bulk change is refused with 403 (got {status})")
    check(olga_cookie != rita, "olga's and rita's sessions are their own")
