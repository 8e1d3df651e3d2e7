import json
import warnings

import numpy as np
import pytest
import torch
from helpers import ASSETS

from autotool import Agent, Policy, PolicyError, select_tool, tool_from_function
from autotool.backbone import BackboneError, load_backbone
from autotool.prompts import prompt
from toolbank import HashEmbedder, Tool, ToolBank

TINY = ASSETS / "tiny-llama"


@pytest.fixture
def policy(bank):
    torch.manual_seed(0)
    return Policy.create(bank, backbone=TINY)


class ScriptedPolicy(Policy):
    """A policy whose generations are scripted, to test the loop around the model deterministically."""

    script: list[str]

    def generate_ids(self, prompts, max_new_tokens, stop, sample=False, temperature=1.0, constraints=None):
        return [self.encode(self.script.pop(0))[0].tolist() for _ in prompts]  # the grammar is not applied


def scripted(policy, *texts):
    policy.__class__ = ScriptedPolicy
    policy.script = list(texts)
    return policy


QUERIES = ["weather forecast in Paris", "convert my PDF document to text", "send an email to Bob", "天气怎么样"]


@pytest.mark.parametrize("mode", ["fast", "reason"])
def test_untrained_policy_selects_like_dense_retrieval(bank, policy, mode):
    for query in QUERIES:
        selection = select_tool(query, bank, policy, k=4, mode=mode, arguments=False)
        dense = bank.search(query, k=4, mode="dense")
        assert [t.qualified_name for t, _ in selection.candidates] == [h.name for h in dense]
        assert selection.tool.qualified_name == dense[0].name
        assert isinstance(selection.rationale, str) and (mode == "reason" or selection.rationale == "")


def test_selection_distribution_is_softmax_of_sharpness_times_cosine(bank, policy):
    selection = select_tool("weather forecast", bank, policy, k=10, mode="fast", arguments=False)
    probs = np.array([p for _, p in selection.candidates])
    assert probs.sum() == pytest.approx(1.0, abs=1e-5)  # the bank (4 tools) is smaller than top-K
    cosines = np.array([h.score for h in bank.search("weather forecast", k=10, mode="dense")])
    g = float(policy.head.log_g.detach().exp())
    expected = np.exp(2 * g * cosines) / np.exp(2 * g * cosines).sum()
    np.testing.assert_allclose(probs, expected, rtol=1e-4)
    assert selection.probability == pytest.approx(probs[0])


def test_lexical_prior_adds_normalised_bm25_to_the_cosine(bank, policy):
    from autotool.prompts import TokenBudget
    from autotool.rollout import StepInput, ToolTable, rollout

    policy.head.lexical.fill_(0.5)
    query = "weather forecast"
    selection = select_tool(query, bank, policy, k=10, mode="fast", arguments=False)
    g = float(policy.head.log_g.detach().exp())
    cosine = {h.name: h.score for h in bank.search(query, k=10, mode="dense")}
    bm25 = bank.search(query, k=10, mode="bm25")
    assert bm25 and len(bm25) < len(bank)  # some tools share no word with the query: their prior is 0
    lexical = {h.name: h.score / bm25[0].score for h in bm25}
    logits = np.array([2 * g * (cosine[n] + 0.5 * lexical.get(n, 0.0)) for n in cosine])
    expected = dict(zip(cosine, np.exp(logits) / np.exp(logits).sum()))
    assert [p for _, p in selection.candidates] == pytest.approx(
        [expected[t.qualified_name] for t, _ in selection.candidates], rel=1e-4
    )
    assert [p for _, p in selection.candidates] == sorted([p for _, p in selection.candidates], reverse=True)
    # rollouts (training and evaluation) score the whole table with the same prior
    table = ToolTable.from_bank(bank)
    ((r,),) = rollout(policy, table, [StepInput(query)], sample=False, mode="fast", budget=TokenBudget(call=2))
    assert {table.tools[t].qualified_name: p for t, p in r.ranking} == pytest.approx(expected, rel=1e-4)


def test_steps_after_earlier_calls_weigh_the_prior_with_l_later(bank, policy):
    from autotool.prompts import StepRecord, TokenBudget, history
    from autotool.rollout import StepInput, ToolTable, rollout

    policy.head.lexical_later.fill_(0.5)  # l stays 0: a first step selects like dense retrieval
    assert policy.head.uses_lexical
    query, earlier = "weather forecast", [StepRecord("", "weather/get_weather", {"city": "Paris"})]
    g = float(policy.head.log_g.detach().exp())
    cosine = {h.name: h.score for h in bank.search(query, k=10, mode="dense")}
    bm25 = bank.search(query, k=10, mode="bm25")
    lexical = {h.name: h.score / bm25[0].score for h in bm25}
    assert "weather/get_weather" in cosine and "weather/get_weather" in lexical
    for context, weight in [(None, 0.0), (earlier, 0.5)]:
        called = {r.tool for r in context or ()}  # not chosen again: out of the softmax
        names = [n for n in cosine if n not in called]
        logits = np.array([2 * g * (cosine[n] + weight * lexical.get(n, 0.0)) for n in names])
        expected = dict(zip(names, np.exp(logits) / np.exp(logits).sum()))
        selection = select_tool(query, bank, policy, k=10, mode="fast", context=context, arguments=False)
        assert {t.qualified_name: p for t, p in selection.candidates} == pytest.approx(expected, rel=1e-4)
        table = ToolTable.from_bank(bank)
        step = StepInput(query, history(context or [], bank.get), tuple(called))
        ((r,),) = rollout(policy, table, [step], sample=False, mode="fast", budget=TokenBudget(call=2))
        assert {table.tools[t].qualified_name: p for t, p in r.ranking if p > 0} == pytest.approx(expected, rel=1e-4)
    assert len({round(v, 6) for v in lexical.values()}) > 1  # the prior does reorder: the two weights differ


def test_format_1_heads_load_without_the_lexical_prior_and_a_damaged_head_is_an_error(bank, policy, tmp_path):
    from safetensors.torch import load_file, save_file

    policy.head.lexical.fill_(0.2)
    policy.save(tmp_path / "policy")
    head_file, manifest_file = tmp_path / "policy" / "anchor_head.safetensors", tmp_path / "policy" / "manifest.json"
    state = load_file(head_file)
    del state["explain"]
    save_file(state, head_file)
    with pytest.raises(PolicyError, match="anchor_head.safetensors.*explain"):  # version 3 has every value
        Policy.load(tmp_path / "policy", bank)
    manifest_file.write_text(json.dumps(json.loads(manifest_file.read_text()) | {"format_version": 2}))
    assert Policy.load(tmp_path / "policy", bank).head.explain.item() == 0.0  # version 2: before the explained anchor
    del state["lexical_later"]
    save_file(state, head_file)
    with pytest.raises(PolicyError, match="anchor_head.safetensors.*lexical_later"):  # version 2 has both weights
        Policy.load(tmp_path / "policy", bank)
    manifest_file.write_text(json.dumps(json.loads(manifest_file.read_text()) | {"format_version": 1}))
    loaded = Policy.load(tmp_path / "policy", bank)  # version 1, before l_later: one weight for every step
    assert loaded.head.lexical.item() == loaded.head.lexical_later.item() == pytest.approx(0.2)
    del state["lexical"]  # version 1, before the prior
    save_file(state, head_file)
    loaded = Policy.load(tmp_path / "policy", bank)
    assert loaded.head.lexical.item() == loaded.head.lexical_later.item() == 0.0 and not loaded.head.uses_lexical


def test_tool_added_after_the_policy_is_selectable(bank, policy):
    bank.add([Tool("book_meeting_room", "Reserve a meeting room in the office for a time slot")])
    selection = select_tool("reserve a meeting room for a time slot", bank, policy, mode="fast", arguments=False)
    assert selection.tool.name == "book_meeting_room"


def test_log_probability_of_a_choice_reaches_the_head(bank, policy):
    tools = torch.from_numpy(bank.vectors([t.name for t in bank]))  # (4, dim)
    query = torch.from_numpy(bank.embedder.encode(["weather forecast"]))  # (1, dim)
    h = torch.randn(1, policy.head.W.in_features)
    log_p = torch.log_softmax(policy.head.logits(policy.head(h, query), tools), dim=-1)[0, 1]
    log_p.backward()
    assert policy.head.W.weight.grad.abs().sum() > 0 and policy.head.log_g.grad is not None


def test_arguments_are_validated_and_retried_once_and_never_raise(bank, policy):
    scripted(policy, '{"city": 5}}', '{"city": "Paris"}}')  # first fails the schema (city is a string)
    selection = select_tool("weather in Paris now", bank, policy, mode="fast")
    assert selection.tool.name == "get_weather" and selection.arguments == {"city": "Paris"}
    scripted(policy, "not json", '{"town": "Paris"}}')  # both fail: 'city' is required
    selection = select_tool("weather in Paris now", bank, policy, mode="fast")
    assert selection.tool.name == "get_weather" and selection.arguments is None
    assert selection.raw_arguments == '{"town": "Paris"}}' and any("'city'" in e for e in selection.argument_errors)


def test_a_value_that_copies_its_description_is_missing(bank, policy):
    description = bank.get("get_weather").parameters["properties"]["city"]["description"]
    scripted(policy, json.dumps({"city": description}) + "}", json.dumps({"city": description.upper()}) + "}")
    selection = select_tool("weather somewhere", bank, policy, mode="fast")
    assert selection.arguments is None
    assert selection.argument_errors == [
        "city: the value only repeats the parameter's name or description (treated as missing)"
    ]


def test_no_tool_fits_below_the_threshold(bank, policy):
    from autotool.select import MIN_COSINE, fitted_min_cosine

    assert fitted_min_cosine(bank) == 0.0 and bank.embedder_id not in MIN_COSINE  # not fitted: never abstains
    chosen = select_tool("weather forecast in Paris", bank, policy, mode="fast", arguments=False)
    expected = float(bank.embedder.encode(["weather forecast in Paris"])[0] @ bank.vectors([chosen.tool.name])[0])
    assert chosen.tool is not None and chosen.cosine == pytest.approx(expected, abs=1e-5)
    scripted(policy)  # no text may be written: a request no tool fits gets no arguments
    above = select_tool("weather forecast in Paris", bank, policy, mode="fast", min_cosine=chosen.cosine + 1e-3)
    assert above.tool is None and above.arguments is None and above.argument_errors == []
    assert [t.name for t, _ in above.candidates] == [t.name for t, _ in chosen.candidates]  # still listed
    assert select_tool("weather forecast in Paris", bank, policy, mode="fast", arguments=False, min_cosine=0).tool


def test_select_tool_keeps_to_namespaces_and_tags(bank, policy):
    chosen = select_tool("weather", bank, policy, mode="fast", arguments=False, tags=["forecast"], k=10)
    assert chosen.tool.name == "get_forecast" and [t.name for t, _ in chosen.candidates] == ["get_forecast"]
    chosen = select_tool("a PDF", bank, policy, mode="fast", arguments=False, namespace=["weather", "files"], k=10)
    assert {t.namespace for t, _ in chosen.candidates} <= {"weather", "files"} and len(chosen.candidates) == 3
    with pytest.raises(ValueError, match="with tags"):
        select_tool("weather", bank, policy, mode="fast", arguments=False, tags=["no-such-tag"])


def test_bad_queries_and_banks(bank, policy, tmp_path):
    with pytest.raises(ValueError, match="empty"):
        select_tool("  ", bank, policy)
    with pytest.raises(ValueError, match="unknown mode"):
        select_tool("weather", bank, policy, mode="slow")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        selection = select_tool("weather forecast " * 7000, bank, policy, mode="fast", arguments=False)
    (truncated,) = [w for w in caught if "truncated" in str(w.message)]
    assert truncated.filename == __file__  # the warning names the caller's line, not the library's
    assert selection.tool.name.startswith("get_")
    empty = ToolBank.create(tmp_path / "empty", HashEmbedder(64))
    with pytest.raises(ValueError, match="has no tools"):
        select_tool("weather", empty, policy)
    one = ToolBank.create(tmp_path / "one", HashEmbedder(64))
    one.add([Tool("only_tool", "does one thing")])
    selection = select_tool("anything at all", one, policy, mode="fast", arguments=False)
    assert selection.tool.name == "only_tool" and selection.probability == pytest.approx(1.0)


def test_save_load_round_trip(bank, policy, tmp_path):
    torch.nn.init.normal_(policy.head.W.weight, std=0.1)
    policy.head.b.data.fill_(0.3)
    policy.head.lexical.fill_(0.2)
    policy.head.explain.fill_(0.5)
    policy.save(tmp_path / "policy")
    manifest = json.loads((tmp_path / "policy" / "manifest.json").read_text())
    assert manifest["embedder"] == "hash:64" and manifest["dim"] == 64 and manifest["format_version"] == 3
    assert not list((tmp_path / "policy").rglob("*.bin")) and not list((tmp_path / "policy").rglob("*.pt"))
    loaded = Policy.load(tmp_path / "policy", bank)
    text = "<|im_start|>user\nweather<|im_end|>\n<think>x</think><tool_anchor>"
    h1, h2 = policy.hidden_at_end(text), loaded.hidden_at_end(text)
    torch.testing.assert_close(h1, h2)
    np.testing.assert_allclose(
        policy.anchors(bank.embedder, ["weather"], ["rain"], h1[None]),
        loaded.anchors(bank.embedder, ["weather"], ["rain"], h2[None]),
        atol=1e-6,
    )
    assert loaded.head_values.uses_hidden and loaded.head_values.lexical == pytest.approx(0.2) and loaded.trained
    assert loaded.head.uses_hidden and loaded.head.lexical.item() == pytest.approx(0.2)
    assert loaded.head.explain.item() == loaded.head_values.explain == pytest.approx(0.5)


def test_frozen_policy_keeps_adapters_merged_and_reuses_the_system_prompt_cache(bank, policy, tmp_path):
    for name, param in policy.model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(param, std=0.5)  # adapters that change the output, so merging matters
    policy.save(tmp_path / "policy")
    frozen = Policy.load(tmp_path / "policy", bank)
    training = Policy.load(tmp_path / "policy", bank, trainable=True)
    text = prompt(frozen.tokenizer, "weather forecast in Paris")
    assert frozen.generate(text, 12, "</think>") == training.generate(text, 12, "</think>")
    assert frozen.adapters_merged and frozen._prefix_cache is not None
    assert not training.adapters_merged and training._prefix_cache is None  # its adapters still learn
    anchor_text = text + "x</think><tool_anchor>"
    torch.testing.assert_close(frozen.hidden_at_end(anchor_text), training.hidden_at_end(anchor_text))
    # A text that does not start with the system prompt is generated from scratch, the same as before.
    other = "<|im_start|>user\nweather<|im_end|>\n<think>"
    assert frozen.prefix_cache(frozen.encode(other)) is None
    assert frozen.generate(other, 8, "</think>") == training.generate(other, 8, "</think>")


def test_load_errors(bank, policy, tmp_path):
    with pytest.raises(PolicyError, match="not a policy folder"):
        Policy.load(tmp_path)
    policy.save(tmp_path / "p")
    other = ToolBank.create(tmp_path / "other", HashEmbedder(32))
    with pytest.raises(PolicyError, match=r"hash:64 \(dim 64\), but bank .* uses hash:32 \(dim 32\)"):
        Policy.load(tmp_path / "p", other)
    with pytest.raises(PolicyError, match=r"re-embed the bank with `toolbank --bank .* reindex --embedder hash:64`"):
        Policy.load(tmp_path / "p", other)
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    (tmp_path / "p" / "manifest.json").write_text(json.dumps({**manifest, "format_version": 7}))
    with pytest.raises(PolicyError, match="'format_version' is 7"):
        Policy.load(tmp_path / "p")


def test_backbone_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "junk").mkdir()
    with pytest.raises(BackboneError, match="not a Hugging Face model folder"):
        load_backbone(tmp_path / "junk")


def test_special_tokens_are_single_tokens():
    model, tokenizer = load_backbone(TINY)
    for token in ["<think>", "</think>", "<tool_anchor>", "<tool_call>", "</tool_call>", "<answer>"]:
        assert len(tokenizer(token, add_special_tokens=False)["input_ids"]) == 1
    assert model.get_input_embeddings().weight.shape[0] >= len(tokenizer)


def test_pure_anchor_uses_the_hidden_state(bank):
    torch.manual_seed(0)
    pure = Policy.create(bank, backbone=TINY, anchor="pure")
    assert pure.head.uses_hidden and float(pure.head.a) == 0.0
    h = pure.hidden_at_end("<think>x</think><tool_anchor>")
    (anchor,) = pure.anchors(bank.embedder, ["weather"], [""], h[None])
    assert np.linalg.norm(anchor) == pytest.approx(1.0, abs=1e-5)
    assert not np.allclose(anchor, bank.embedder.encode(["weather"])[0], atol=1e-3)


def test_agent_registers_functions_and_runs_the_loop(bank, policy):
    calls = []

    def get_stock_price(ticker: str, exchange: str = "NYSE") -> str:
        """Latest stock price of a company by its ticker symbol.

        More text that is not part of the description."""
        calls.append(ticker)
        return f"{ticker}: 123.4"

    tool = tool_from_function(get_stock_price)
    assert tool.description == "Latest stock price of a company by its ticker symbol."
    assert tool.parameters["required"] == ["ticker"]
    assert tool.parameters["properties"]["exchange"] == {"type": "string", "default": "NYSE"}
    agent = Agent(bank, policy)
    agent.register(get_stock_price)
    assert bank.get("get_stock_price").namespace == "agent"
    scripted(policy, "price of a stock", '{"ticker": "ACME"}}', "<answer>ACME trades at 123.4</answer>")
    trajectory = agent.run("What does ACME stock cost?")
    assert calls == ["ACME"] and trajectory.answer == "ACME trades at 123.4" and trajectory.stop == "answer"
    selection, observation = trajectory.steps[0]
    assert selection.tool.name == "get_stock_price" and observation == "ACME: 123.4"
    assert selection.rationale == "price of a stock"
    # the policy wants a second step, but the agent's one tool was called: the run ends without an answer
    scripted(policy, "price of a stock", '{"ticker": "ACME"}}', "<think>and again", "price once more")
    trajectory = agent.run("What does ACME stock cost?")
    assert calls == ["ACME", "ACME"] and len(trajectory.steps) == 1 and trajectory.answer == ""
    assert trajectory.stop == "no_tools"


def test_default_policy_prefers_your_own_then_the_shipped_one(bank, policy, tmp_path, monkeypatch):
    import autotool.select as select

    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(select, "_default", {})
    shipped = tmp_path / "shipped"
    policy.info["trained"] = "shipped"
    policy.save(shipped)
    monkeypatch.setattr(select, "SHIPPED_POLICY", shipped)
    assert select.default_policy(bank).info["trained"] == "shipped"

    monkeypatch.setattr(select, "_default", {})
    policy.info["trained"] = "my own"
    policy.save(select.default_policy_path())
    assert select.default_policy(bank).info["trained"] == "my own"


def test_shipped_policy_for_another_embedder_falls_back_with_a_warning(bank, policy, tmp_path, monkeypatch):
    import autotool.select as select

    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(select, "_default", {})
    policy.save(tmp_path / "shipped")
    monkeypatch.setattr(select, "SHIPPED_POLICY", tmp_path / "shipped")
    other = ToolBank.create(tmp_path / "other", HashEmbedder(32))
    other.add([Tool("t", "a tool", {})])
    untrained = object()
    monkeypatch.setattr(select.Policy, "create", classmethod(lambda cls, b: untrained))  # the real one loads SmolLM2
    with pytest.warns(UserWarning, match=r"reads hash:64 embeddings \(dim 64\).*uses hash:32.*untrained anchor"):
        assert select.default_policy(other) is untrained


def test_the_untrained_anchor_warning_names_the_callers_line(bank, policy, tmp_path, monkeypatch):
    import autotool.select as select

    monkeypatch.setenv("AUTOTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(select, "SHIPPED_POLICY", tmp_path / "none")  # no policy anywhere
    monkeypatch.setattr(select.Policy, "create", classmethod(lambda cls, b: policy))  # the real one loads SmolLM2
    calls = (
        lambda: select.select_tool("weather", bank, mode="fast", arguments=False),
        lambda: select.select_tools("weather", 2, bank=bank),
    )
    for call in calls:
        monkeypatch.setattr(select, "_default", {})
        with pytest.warns(UserWarning, match="untrained anchor") as caught:
            call()
        assert {w.filename for w in caught if "untrained anchor" in str(w.message)} == {__file__}


def test_a_policy_reads_the_embedders_its_manifest_also_lists(bank, policy, tmp_path):
    policy.save(tmp_path / "p")
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    (tmp_path / "p" / "manifest.json").write_text(json.dumps({**manifest, "also_reads": ["tuned:64", "hash:32"]}))
    tuned = HashEmbedder(64)
    tuned.id = "tuned:64"  # another embedder of the same dimension
    assert Policy.load(tmp_path / "p", ToolBank.create(tmp_path / "tuned", tuned)).embedder == "hash:64"
    with pytest.raises(PolicyError, match=r"reads embeddings of hash:64 or tuned:64 or hash:32 \(dim 64\)"):
        Policy.load(tmp_path / "p", ToolBank.create(tmp_path / "other", HashEmbedder(32)))  # listed, other dim


def test_a_policy_trained_on_the_stock_embedder_reads_banks_of_the_tuned_default(bank, policy, tmp_path):
    from autotool.policy import readable_embedders, reads_embeddings_of
    from toolbank import STOCK_EMBEDDER, TUNED_EMBEDDER

    policy.save(tmp_path / "p")
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    stock = {**manifest, "embedder": STOCK_EMBEDDER, "dim": 64}
    assert readable_embedders(stock) == [STOCK_EMBEDDER, TUNED_EMBEDDER]  # what `make train-default` writes
    assert readable_embedders(manifest) == ["hash:64"]  # only the stock model gets the tuned one added
    tuned = HashEmbedder(64)
    tuned.id = TUNED_EMBEDDER  # a bank built with the new default (without loading the model)
    assert reads_embeddings_of(stock, ToolBank.create(tmp_path / "tuned", tuned))
