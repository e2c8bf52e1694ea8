from agents.llm.local import MAX_ITEMS, MAX_STRING, bounded_schema, tool_call_schema
from tasks.schemas import DraftAnswer, Reformulation


def test_every_free_string_and_list_is_bounded():
    schema = bounded_schema(Reformulation.model_json_schema())
    text = str(schema)
    assert f"'maxLength': {MAX_STRING}" in text
    assert schema["properties"]["expansions"]["maxItems"] == 2
    draft = bounded_schema(DraftAnswer.model_json_schema())
    assert draft["properties"]["passage_ids"]["maxItems"] == MAX_ITEMS
    assert draft["additionalProperties"] is False


def test_tool_call_schema_names_each_tool():
    tools = [
        {
            "type": "function",
            "function": {
                "name": n,
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
        for n in ("a", "b")
    ]
    schema = tool_call_schema(tools)
    assert [o["properties"]["name"]["const"] for o in schema["anyOf"]] == ["a", "b"]
    assert schema["anyOf"][0]["properties"]["arguments"]["properties"]["q"]["maxLength"] == 400
