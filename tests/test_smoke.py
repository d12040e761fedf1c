from tests.conftest import assert_user_error


def test_scaled_default_example_runs(invoke_json):
    doc = invoke_json("scaled")
    assert doc["lesson"] == "scaled"
    assert [step["key"] for step in doc["steps"]] == ["scores", "scaled", "weights", "output"]


def test_shape_mismatch_is_a_user_error(invoke):
    result = invoke("scaled", "--q", "1,0;0,1", "--k", "1,1,1", "--v", "1,2")
    assert_user_error(result, "Q has 2 columns but K has 3")
