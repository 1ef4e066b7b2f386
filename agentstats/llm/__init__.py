"""Talking to OpenAI-compatible endpoints: one client, one prompt shelf.

:mod:`~agentstats.llm.client`
    :class:`~agentstats.llm.client.LLMClient`, through which every call to a model goes (the judge, the optimization
    loop, the judged metrics): transport and retries, the response cache, the budget, prices;
:mod:`~agentstats.llm.endpoint`
    :class:`~agentstats.llm.endpoint.Endpoint` (where a call goes, how it is retried) and API keys from the
    environment;
:mod:`~agentstats.llm.transport`
    what one call came to (:class:`~agentstats.llm.transport.Exchange`), the HTTP clients, error classification,
    ``Retry-After`` and backoff;
:mod:`~agentstats.llm.probe`
    whether an endpoint is there before any work (:func:`~agentstats.llm.probe.check_endpoint`,
    :class:`~agentstats.llm.probe.EndpointUnavailable`: exit status 69 on the command line);
:mod:`~agentstats.llm.batch`
    many structured calls at once with cache claims, a probe and a circuit breaker (the judge's batches);
:mod:`~agentstats.llm.cache`
    the on-disk response cache (SQLite) with claims on work in flight;
:mod:`~agentstats.llm.budget`
    money spent and reserved against a limit;
:mod:`~agentstats.llm.pricing`
    cost per call from a price table;
:mod:`~agentstats.llm.prompts`
    every versioned prompt (:class:`~agentstats.llm.prompts.PromptTemplate`), one module per user.

The package sits below ``scoring``, ``metrics`` and ``optimize`` and imports none of them: a caller that needs its
own types (the judge's verdict schemas) passes them in.
"""
