# Vericap: one image for the web process, the Celery workers and beat (docker-compose.yml picks the command).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings_production

WORKDIR /app

# torch first and pinned, so nothing in requirements.txt can pull another build. The default index is
# PyTorch's CPU-only one (the web process and the default worker never need CUDA); the gpu worker's image
# is built with TORCH_INDEX_URL="" to take the default index, whose Linux wheels bundle CUDA. Where no
# index can be reached but a torch 2.13.0 wheel lies on the build host, TORCH_WHEEL_DIR names the folder it
# is mounted at (`podman build -v /opt/wheels:/wheels:ro --build-arg TORCH_WHEEL_DIR=/wheels`, as
# bench/image_smoke.sh does); its dependencies then come from the ordinary index.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_WHEEL_DIR=
RUN if [ -n "$TORCH_WHEEL_DIR" ]; then pip install --no-deps "$TORCH_WHEEL_DIR"/torch-2.13.0*.whl \
        && pip install torch==2.13.0; \
    elif [ -n "$TORCH_INDEX_URL" ]; then pip install --index-url "$TORCH_INDEX_URL" torch==2.13.0; \
    else pip install torch==2.13.0; fi

COPY requirements.txt ./
RUN pip install -r requirements.txt

COPY . .

# Static files are collected at build time (whitenoise serves them); the settings need a key and DEBUG off
# to load, so both are given for this one command only and never baked into the image's environment.
RUN SECRET_KEY=collectstatic-only DEBUG=false python manage.py collectstatic --noinput \
    && useradd --create-home --uid 10001 vericap \
    && mkdir -p /app/var/media \
    && chown -R vericap:vericap /app/var

USER vericap
EXPOSE 8000

# 3 processes x 8 threads, as measured by bench/hit_serving.py; GUNICORN_* variables change it.
CMD ["gunicorn", "config.wsgi", "--config", "config/gunicorn.conf.py"]
