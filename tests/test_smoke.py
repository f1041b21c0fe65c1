def test_capabilities(anon, db):
    response = anon.get("/v1/capabilities")
    assert response.status_code == 200
    assert response.json()["urn:opa:core"]["1.0.0"]["root"] == "/v1"


def test_add_and_get(api):
    response = api.post(
        "/v1/subscriptions",
        {"subscriptions": [{"feed_url": "https://podnews.net/rss"}, {"feed_url": "example.com"}]},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["success"][0]["guid"] == "9b024349-ccf0-5f69-a609-6b82873eab3c"
    assert body["failure"] == [{"feed_url": "example.com", "message": "No protocol present"}]
    got = api.get("/v1/subscriptions/9b024349-ccf0-5f69-a609-6b82873eab3c")
    assert got.status_code == 200, got.content
