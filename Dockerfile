# The operator image: the Kopf operator for FlinkJobs (`strom-operator`), as the Helm chart runs it.
# Build from the repository root:  docker build -t strom/strom-operator:0.1.0 .
FROM python:3.11.10-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/strom
# The distribution holds both packages (setuptools finds them in runtime-image/ and operator/);
# the operator imports only the engine's configuration registry, not its runtime.
COPY pyproject.toml README.md ./
COPY runtime-image/strom ./runtime-image/strom
COPY operator/strom_operator ./operator/strom_operator
# The install step of the README's operator section: the distribution with the [operator] extra.
RUN pip install --no-compile '.[operator]' \
    && groupadd --gid 10001 strom && useradd --uid 10001 --gid strom --no-create-home --shell /usr/sbin/nologin strom

USER 10001:10001
EXPOSE 8080 9090
ENTRYPOINT ["strom-operator"]
CMD ["--standalone", "--all-namespaces"]
